import ArgumentParser
import AsyncHTTPClient
import Foundation
import NottyCommandLine

/// `notty-server healthcheck`: a container's HEALTHCHECK. Asks this machine's `notty serve`
/// for `GET /healthz`, finding its port and TLS the way `notty serve` finds its settings (the
/// file `NOTTY_CONFIG` or `--config` names, then `NOTTY_*` variables, then the flags given).
struct HealthCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck",
        abstract: "Exit 0 when this machine's notty serve answers GET /healthz with 200, else 1 (for a container's HEALTHCHECK).",
        discussion: """
            The port and TLS are notty serve's: from --config FILE (or NOTTY_CONFIG), the \
            NOTTY_* variables (NOTTY_PORT, NOTTY_TLS_CERT, …) and any serve flags given after \
            --, e.g. notty-server healthcheck -- --port 9000. A service listening on 0.0.0.0 \
            or :: is asked on 127.0.0.1. TLS certificates are not verified (it asks itself).
            """)

    @Option(help: ArgumentHelp("Wait this many seconds for the answer.", valueName: "seconds")) var timeout: Int = 3
    @Argument(parsing: .postTerminator, help: ArgumentHelp("notty serve's flags, after --.", valueName: "serve flags")) var serveFlags: [String] = []

    func run() async throws {
        let serve: Serve
        do {
            serve = try Serve.parse(Array(try ServeConfigFile.expand(["serve"] + serveFlags).dropFirst()))
        } catch {
            warn("healthcheck: notty serve's settings: \(Serve.message(for: error))")
            throw ExitCode(1)
        }
        let host = ["0.0.0.0", "::", ""].contains(serve.host) ? "127.0.0.1" : serve.host
        let scheme = serve.tlsCert == nil ? "http" : "https"
        let url = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(serve.port)/healthz"
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(certificateVerification: .none))
        let answer: Result<UInt, any Error>
        do {
            answer = .success(try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(Int64(max(1, timeout)))).status.code)
        } catch {
            answer = .failure(error)
        }
        try? await client.shutdown()
        switch answer {
        case .success(200): return
        case .success(let code): warn("healthcheck: \(url) answered \(code)")
        case .failure(let error): warn("healthcheck: \(url): \(error)")
        }
        throw ExitCode(1)
    }
}

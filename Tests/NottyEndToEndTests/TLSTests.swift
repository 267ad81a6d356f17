import Foundation
import NottyCore
import NottyPOSIX
import NottyTestSupport
import Testing

/// testssl.sh (Debian's `testssl`), when installed; `.ci/run` installs it.
enum TestSSL {
    static let path = ["/usr/bin/testssl", "/usr/bin/testssl.sh", "/usr/local/bin/testssl.sh"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"
}

@Suite("TLS that operators can check", .timeLimit(.minutes(8)), .serialized)
struct TLSTests {
    /// A self-signed certificate for 127.0.0.1 named `name`, written over `cert` and `key`.
    static func certificate(_ name: String, cert: String, key: String) async throws {
        let made = try await Repository.run([
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
            "-subj", "/CN=\(name)", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        try #require(made.status == 0, "openssl req: \(made.output)")
    }

    /// The subject a new connection is shown.
    static func subject(_ port: Int) async throws -> String {
        try await Repository.run(["sh", "-c", "echo | openssl s_client -connect 127.0.0.1:\(port) 2>/dev/null | openssl x509 -noout -subject"]).output
    }

    @Test(
        "no TLS 1.0 or 1.1, no CBC suite, HSTS and security headers; SIGHUP reads a renewed certificate for new connections while an open one goes on; testssl.sh --fast finds nothing of MEDIUM or above but the self-signed certificate"
    )
    func hardenedTLS() async throws {
        let directory = Repository.temporaryDirectory("notty-tls")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cert = directory.appendingPathComponent("cert.pem").path, key = directory.appendingPathComponent("key.pem").path
        try await Self.certificate("first.notty.test", cert: cert, key: key)
        let service = try await ServeProcess(directory: directory, extraArguments: ["--tls-cert", cert, "--tls-key", key])
        defer { service.stop() }
        #expect(service.scheme == "https")
        let port = service.port

        let headers = try await Repository.run(["curl", "-sk", "-D", "-", "-o", "/dev/null", "\(service.url)/healthz"]).output.lowercased()
        #expect(headers.contains("strict-transport-security: max-age=31536000") && headers.contains("x-content-type-options: nosniff"), "\(headers)")
        for (flags, what) in [
            (["-tls1"], "TLS 1.0"), (["-tls1_1"], "TLS 1.1"), (["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA"], "a CBC suite"),
            (["-tls1_2", "-cipher", "AES128-GCM-SHA256"], "a suite without forward secrecy"),
        ] {
            let tried = try await Repository.run([
                "sh", "-c", "echo | openssl s_client -connect 127.0.0.1:\(port) \(flags.joined(separator: " ")) 2>&1",
            ]).output
            #expect(tried.contains("Cipher is (NONE)") || tried.contains("alert"), "\(what) was accepted:\n\(tried.prefix(600))")
        }
        #expect(try await Self.subject(port).contains("first.notty.test"))

        // A kept-alive connection opened before the renewal: one request before, one after.
        let output = directory.appendingPathComponent("client.out")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        let input = Pipe()
        let outputFile = try FileHandle(forWritingTo: output)
        let client = try ChildProcess.start(
            "/usr/bin/openssl", ["s_client", "-quiet", "-connect", "127.0.0.1:\(port)"],
            stdin: .descriptor(input.fileHandleForReading.fileDescriptor), stdout: .descriptor(outputFile.fileDescriptor), stderr: .null)
        try? outputFile.close()
        try? input.fileHandleForReading.close()
        defer { terminate(client) }
        func answers() -> Int { ((try? String(contentsOf: output, encoding: .utf8)) ?? "").components(separatedBy: "HTTP/1.1 200 OK").count - 1 }
        let request = Data("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        input.fileHandleForWriting.write(request)
        #expect(await eventually(timeout: .seconds(30)) { answers() == 1 }, "no answer on the open connection")

        try await Self.certificate("renewed.notty.test", cert: cert, key: key)
        let pid = try #require(service.process?.pid)
        kill(pid, SIGHUP)
        #expect(
            await eventually(timeout: .seconds(30)) {
                ((try? String(contentsOf: service.log, encoding: .utf8)) ?? "").contains("certificate was read again")
            },
            "no reload in the log")
        #expect(service.process?.isRunning == true, "SIGHUP ended the service")
        #expect(try await Self.subject(port).contains("renewed.notty.test"), "a new connection still gets the old certificate")
        input.fileHandleForWriting.write(request)
        #expect(await eventually(timeout: .seconds(30)) { answers() == 2 }, "the connection opened before the renewal was dropped")

        // A renewal that cannot be read keeps the certificate in use.
        try "not a certificate".write(toFile: cert, atomically: true, encoding: .utf8)
        kill(pid, SIGHUP)
        #expect(
            await eventually(timeout: .seconds(30)) {
                ((try? String(contentsOf: service.log, encoding: .utf8)) ?? "").contains("could not be read again")
            })
        #expect(try await Self.subject(port).contains("renewed.notty.test"))

        guard let testssl = TestSSL.path else {
            #expect(!TestSSL.required, "testssl.sh is not installed (apt-get install -y testssl.sh); .ci/run installs it")
            print("SKIPPED LOUDLY: testssl.sh is not installed (apt-get install -y testssl.sh)")
            return
        }
        let report = directory.appendingPathComponent("testssl.json").path
        let started = ContinuousClock.now
        let ran = try await offThePool {
            try runToEnd(
                testssl, ["--fast", "--quiet", "--warnings", "off", "--color", "0", "--jsonfile", report, service.url],
                environment: ProcessInfo.processInfo.environment, name: "testssl.sh", sameStream: true, limit: 600)
        }
        let findings = (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report)))) as? [[String: Any]] ?? []
        try #require(
            !findings.isEmpty, "testssl.sh wrote no findings (status \(ran.status)): \(String(decoding: ran.out, as: UTF8.self).suffix(2000))")
        // The certificate's own findings are the test's: self-signed, two days, no OCSP.
        let serious = findings.filter {
            ["MEDIUM", "HIGH", "CRITICAL"].contains($0["severity"] as? String ?? "") && !(($0["id"] as? String ?? "").hasPrefix("cert"))
        }
        #expect(serious.isEmpty, "testssl.sh: \(serious.map { "\($0["severity"] ?? "") \($0["id"] ?? ""): \($0["finding"] ?? "")" })")
        let shown: [String] = ["TLS1", "TLS1_1", "TLS1_2", "TLS1_3", "cipher_order", "HSTS_time", "BEAST", "LUCKY13", "cipherlist_OBSOLETED"]
        let summary = shown.compactMap { (id: String) -> String? in
            guard let finding = findings.first(where: { $0["id"] as? String == id }) else { return nil }
            return "\(id): \(finding["finding"] as? String ?? "")"
        }
        print(
            "testssl.sh --fast (\(ContinuousClock.now - started)): \(findings.count) findings, none of MEDIUM or above but the certificate's; \(summary.joined(separator: "; "))"
        )
    }
}

import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine
import NottyCore
import NottyPOSIX
import NottySync

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Try notty with no setup: an embedded service, a demo user and live notifications.",
        discussion: """
            Starts a service on 127.0.0.1 with a SQLite store in a temporary folder (or --data), \
            publishes a realistic set of notifications and opens the notification center; a new \
            notification arrives every 20 s or so. In a second terminal, `notty demo --join` \
            signs in a second device: dismiss on one, watch it go on the other. With --web the \
            demo's web inbox opens too, in $BROWSER (else xdg-open), signed in as the demo user \
            through a one-time link.
            """)

    @Option(help: ArgumentHelp("Keep the demo's files here instead of a temporary folder.", valueName: "dir")) var data: String?
    @Flag(help: "Join the demo running in another terminal as a second device.") var join = false
    @Option(help: ArgumentHelp("Seconds between new notifications (0: none).", valueName: "seconds")) var every: Int = 20
    @Flag(help: "Also open the demo's web inbox in $BROWSER (else xdg-open), already signed in.") var web = false

    /// Where a running demo says how to join it.
    static var stateFile: String {
        let dir = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? NSTemporaryDirectory()
        return (dir as NSString).appendingPathComponent("notty-demo-\(getuid()).json")
    }

    func run() async throws {
        try await reportingErrors {
            if join { try await joinDemo() } else { try await runDemo() }
        }
    }

    private func runDemo() async throws {
        let directory = data ?? (NSTemporaryDirectory() as NSString).appendingPathComponent("notty-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if data == nil { try? FileManager.default.removeItem(atPath: directory) } }

        // The embedded service (notty-server, which holds the service's code), quiet: its
        // logs would draw over the terminal UI.
        let service = try await DemoServiceProcess.start(directory: directory, every: every)
        defer { service.stop() }

        // Tell `notty demo --join` how to join, then sign this terminal in as the first device.
        let state = JSONValue.object([
            "url": .string(service.url), "user": .string("demo"), "password": .string(service.password), "dir": .string(directory),
            "pid": .number(Double(getpid())),
        ])
        if !FileManager.default.createFile(atPath: Self.stateFile, contents: Data(state.jsonText.utf8), attributes: [.posixPermissions: 0o600]) {
            warn("cannot write \(Self.stateFile): notty demo --join will not find this demo")
        }
        defer { try? FileManager.default.removeItem(atPath: Self.stateFile) }
        let device = try await signIn(url: service.url, password: service.password, home: directory + "/device-1", name: "demo device 1")
        if web { try await openWebInbox(device, url: service.url, password: service.password) }
        try await openCenter(device)
    }

    private func joinDemo() async throws {
        guard let data = FileManager.default.contents(atPath: Self.stateFile),
            case .object(let state)? = JSONParser.parse(data),
            case .string(let url)? = state["url"], case .string(let password)? = state["password"], case .string(let directory)? = state["dir"]
        else {
            throw CLIError("no demo is running: start one with notty demo in another terminal first")
        }
        if case .number(let pid)? = state["pid"], kill(pid_t(pid), 0) != 0 {
            throw CLIError("the demo that wrote \(Self.stateFile) is no longer running: start one with notty demo")
        }
        let number = getpid()
        let device = try await signIn(url: url, password: password, home: directory + "/device-\(number)", name: "demo device \(number)")
        if web { try await openWebInbox(device, url: url, password: password) }
        try await openCenter(device)
    }

    /// Opens the web inbox in a browser, signed in through a one-time link (60 s, one use). When
    /// no browser starts, says where the inbox is and how to sign in, and waits for Enter before
    /// the center draws over it.
    private func openWebInbox(_ device: Device, url: String, password: String) async throws {
        let client = ServiceClient(file: device.credentialsFile, credentials: try device.credentials())
        let link = try await client.signInLink()
        guard let problem = LinkOpener.open(link) else { return }
        FileHandle.standardError.write(
            Data(
                """
                notty demo: \(problem)
                The demo's web inbox: \(url)/ (user demo, password \(password)), or within 60 s this one-time link:
                \(link)
                Press Enter for the notification center.

                """.utf8))
        if isatty(STDIN_FILENO) != 0 { _ = readLine() }
    }

    /// Signs a device in over HTTP, exactly as `notty login` does, with its files in `home`.
    private func signIn(url: String, password: String, home: String, name: String) async throws -> Device {
        let device = Device(environment: ["NOTTY_HOME": home])
        _ = try await signInDevice(device, server: url, userName: "demo", password: password, deviceName: name)
        return device
    }
}

/// `notty-server demo-service`, the demo's service, as a child of `notty demo`: it runs until
/// ``stop()`` or until this process ends (its standard input is a pipe from here).
final class DemoServiceProcess {
    let url: String
    let password: String
    private let process: ChildProcess
    private let input: Pipe

    private init(url: String, password: String, process: ChildProcess, input: Pipe) {
        self.url = url
        self.password = password
        self.process = process
        self.input = input
    }

    /// Starts the service and waits (30 s at most) for its line saying where it listens.
    static func start(directory: String, every: Int) async throws -> DemoServiceProcess {
        let input = Pipe(), output = Pipe()
        let logPath = directory + "/service.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        guard let log = FileHandle(forWritingAtPath: logPath) else { throw CLIError("cannot write the demo's log \(logPath)") }
        defer { try? log.close() }
        let process: ChildProcess
        do {
            process = try ChildProcess.start(
                try ServerProgram.path(), ["demo-service", "--data", directory, "--every", String(every)],
                stdin: .descriptor(input.fileHandleForReading.fileDescriptor), stdout: .descriptor(output.fileHandleForWriting.fileDescriptor),
                stderr: .descriptor(log.fileDescriptor))
        } catch {
            throw CLIError("cannot start the demo's service: \(error)")
        }
        // The child has its own copies: its ends closed here, an end of file is its end.
        try? input.fileHandleForReading.close()
        try? output.fileHandleForWriting.close()
        let descriptor = output.fileHandleForReading.fileDescriptor
        let line = try await offThePool { LineReader.line(from: descriptor, seconds: 30) }
        guard let line, case .object(let ready)? = JSONParser.parse(Data(line.utf8)),
            case .string(let url)? = ready["url"], case .string(let password)? = ready["password"]
        else {
            process.signal(SIGTERM)
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            throw CLIError("the demo's service did not start\(log.isEmpty ? "" : ": " + log)")
        }
        return DemoServiceProcess(url: url, password: password, process: process, input: input)
    }

    /// Ends the service (closing its standard input) and waits for it.
    func stop() {
        try? input.fileHandleForWriting.close()
        process.wait()
    }
}

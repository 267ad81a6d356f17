import Foundation
import NottyPOSIX
import NottyTestSupport
import Testing

/// A private network namespace with its own mounts, held open by a process that sleeps: only
/// loopback is up in it (nothing it sends leaves the machine), 169.254.169.254 is an address of
/// its loopback (so that a request that should never be made would be seen arriving), and its
/// `/etc/hosts` names `metadata.test` (169.254.169.254), `alibaba.test` (100.100.100.200) and
/// `receiver.test` (127.0.0.1).
/// Processes join it through ``wrapper(for:)``. Needs root, `unshare`, `nsenter` and `ip`.
final class PrivateNetwork: @unchecked Sendable {  // @unchecked: holds a Foundation `Process`
    let directory: URL
    let holder: ChildProcess

    static var unavailable: String? {
        guard getuid() == 0 else { return "needs root (unshare -n -m)" }
        for tool in ["/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip"] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing"
        }
        return nil
    }

    init(directory: URL) async throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let hosts = directory.appendingPathComponent("hosts")
        try "127.0.0.1 localhost\n::1 localhost\n169.254.169.254 metadata.test\n127.0.0.1 receiver.test\n100.100.100.200 alibaba.test\n".write(
            to: hosts, atomically: true, encoding: .utf8)
        let ready = directory.appendingPathComponent("ready")
        // Each step is logged with its time: a start that does not finish says where it stood.
        let script = """
            set -e
            echo "$(date +%T.%N) in the namespace"
            ip link set lo up
            ip addr add 169.254.169.254/32 dev lo
            echo "$(date +%T.%N) loopback up"
            mount --bind \(hosts.path) /etc/hosts
            touch \(ready.path)
            echo "$(date +%T.%N) ready"
            exec sleep 600
            """
        let started = Date().formatted(.iso8601.time(includingFractionalSeconds: true))
        holder = try startLogged(
            "/usr/bin/unshare", ["--net", "--mount", "--propagation", "private", "/bin/sh", "-c", script],
            log: directory.appendingPathComponent("holder.log"), environment: [:])
        guard await eventually(timeout: .seconds(30), { FileManager.default.fileExists(atPath: ready.path) || !self.holder.isRunning }),
            holder.isRunning
        else {
            let log = (try? String(contentsOf: directory.appendingPathComponent("holder.log"), encoding: .utf8)) ?? ""
            throw SupportError("the private network did not start within 30 s (asked at \(started)); its log:\n\(log)")
        }
    }

    /// A script that runs `executable` with its arguments inside this namespace.
    func wrapper(for executable: String, name: String) throws -> URL {
        let file = directory.appendingPathComponent(name)
        try "#!/bin/sh\nexec /usr/bin/nsenter --target \(holder.pid) --net --mount -- \(executable) \"$@\"\n"
            .write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file.path)
        return file
    }

    func stop() { terminate(holder, grace: 2) }
}

/// Loopback receivers in the namespace: every request each gets is a line `ADDRESS METHOD PATH`
/// in `log`; `/moved` answers a redirect to the metadata address.
let receiverScript = """
    import http.server, sys, threading
    log = open(sys.argv[1], "a", buffering=1)
    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self):
            log.write("%s %s %s\\n" % (self.server.server_address[0], self.command, self.path))
            length = int(self.headers.get("Content-Length") or 0)
            if length: self.rfile.read(length)
            if self.path == "/moved":
                self.send_response(302); self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            else:
                self.send_response(200)
            self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
        do_GET = do_POST = do_PUT = do_DELETE = answer
        def log_message(self, *args): pass
    servers = [http.server.ThreadingHTTPServer(("169.254.169.254", 80), Handler), http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)]
    for s in servers[1:]: threading.Thread(target=s.serve_forever, daemon=True).start()
    log.write("listening\\n")
    servers[0].serve_forever()
    """

@Suite("The outbound policy end to end, in a private network namespace", .timeLimit(.minutes(5)), .serialized)
struct OutboundPolicyEndToEndTests {
    @Test(
        "escalation targets: refused literals fail when the rule is made, a name for the metadata address and the service itself fail 'not allowed' at delivery, a redirect is not followed, a loopback receiver is reached; nothing reaches 169.254.169.254"
    )
    func escalationTargets() async throws {
        if let missing = PrivateNetwork.unavailable {
            try #require(ProcessInfo.processInfo.environment["CI"] != "true", "CI must run the outbound policy test: \(missing)")
            print("SKIPPED (loudly): the outbound policy end-to-end test: \(missing)")
            return
        }
        let home = Repository.temporaryDirectory("notty-outbound")
        defer { try? FileManager.default.removeItem(at: home) }
        let network = try await PrivateNetwork(directory: home.appendingPathComponent("net"))
        defer { network.stop() }
        let notty = try network.wrapper(for: Repository.nottyBinary.path, name: "notty")
        let python = try network.wrapper(for: "python3", name: "python3")
        let hits = home.appendingPathComponent("hits.log")
        let script = home.appendingPathComponent("receiver.py")
        try receiverScript.write(to: script, atomically: true, encoding: .utf8)
        let receiverPort = 18_000 + Int.random(in: 0..<2000)
        let receiver = try startLogged(
            python.path, [script.path, hits.path, String(receiverPort)], log: home.appendingPathComponent("receiver.log"), environment: [:])
        defer { terminate(receiver, grace: 2) }
        func seen() -> [String] { ((try? String(contentsOf: hits, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        #expect(
            await eventually(timeout: .seconds(30)) { seen().contains("listening") },
            "\((try? String(contentsOf: home.appendingPathComponent("receiver.log"), encoding: .utf8)) ?? "")")

        let serve = try await ServeProcess(directory: home.appendingPathComponent("service"), binary: notty)
        defer { serve.stop() }
        let device = NottyCLI(home: home.appendingPathComponent("device"), binary: notty)
        try await device.login(serve.url)

        // Literal addresses the policy refuses: the rule is refused, in one line that says why.
        for (n, target) in [
            "webhook:http://169.254.169.254/latest/meta-data/", "ntfy:http://169.254.169.254/alerts",
            "webhook:http://[::ffff:169.254.169.254]/", "webhook:http://[fe80::1]/", "webhook:http://2852039166/",
            "webhook:http://0.0.0.0:\(serve.port)/", "webhook:http://127.0.0.1:\(serve.port)/v1/me", "webhook:http://[::1]:\(serve.port)/",
            // PROTOCOL.md §15: the metadata services that are not link-local, IPv4 in IPv6's transition forms.
            "webhook:http://100.100.100.200/latest/", "webhook:http://[fd00:ec2::254]/", "webhook:http://168.63.129.16/",
            "webhook:http://192.0.0.192/", "webhook:http://[2002:a9fe:a9fe::1]/", "webhook:http://[64:ff9b:1::a9fe:a9fe]/",
            "webhook:http://[::ffff:0:a9fe:a9fe]/",
        ].enumerated() {
            let added = try await device.run(["escalate", "add", "--after", "5s", "--to", target, "--name", "refused\(n)"])
            #expect(added.status == 1, "\(target): \(added.out) \(added.err)")
            #expect(added.err.contains("is not allowed: ") && added.err.split(separator: "\n").count == 1, "\(target): \(added.err)")
        }
        // Names are checked at each delivery: the test says "not allowed", not "unreachable".
        let rules: [(name: String, target: String, says: String)] = [
            (
                "metadata", "webhook:http://metadata.test/latest/meta-data/",
                "failed webhook:http://metadata.test/latest/meta-data/: not allowed: metadata.test is a link-local address (169.254.169.254)"
            ),
            ("ntfymeta", "ntfy:http://metadata.test/alerts", "not allowed: metadata.test is a link-local address"),
            ("alibaba", "webhook:http://alibaba.test/latest/meta-data/", "not allowed: alibaba.test is a cloud metadata service's address"),
            (
                "itself", "webhook:http://localhost:\(serve.port)/v1/me",
                "not allowed: localhost:\(serve.port) is this service's own listening address"
            ),
            (
                "moved", "webhook:http://receiver.test:\(receiverPort)/moved",
                "failed webhook:http://receiver.test:\(receiverPort)/moved: answered 302"
            ),
        ]
        for rule in rules {
            let added = try await device.run(["escalate", "add", "--after", "5s", "--to", rule.target, "--name", rule.name])
            #expect(added.status == 0, "\(rule.target): \(added.err)")
            let tested = try await device.run(["escalate", "test", rule.name])
            #expect(tested.status == 1 && tested.out.contains(rule.says), "\(rule.target): \(tested.out) \(tested.err)")
            #expect(!tested.out.contains("unreachable"), "\(tested.out)")
        }
        // A loopback receiver that is not the service is reached, by number and by name.
        for (name, target) in [
            ("loop", "webhook:http://127.0.0.1:\(receiverPort)/hook"), ("named", "ntfy:http://receiver.test:\(receiverPort)/alerts"),
        ] {
            #expect(try await device.run(["escalate", "add", "--after", "5s", "--to", target, "--name", name]).status == 0)
            let tested = try await device.run(["escalate", "test", name])
            #expect(tested.status == 0, "\(target): \(tested.out) \(tested.err)")
        }
        #expect(seen().filter { $0.hasPrefix("127.0.0.1 ") } == ["127.0.0.1 POST /moved", "127.0.0.1 POST /hook", "127.0.0.1 POST /"], "\(seen())")
        #expect(!seen().contains { $0.hasPrefix("169.254.169.254") }, "the metadata address was reached: \(seen())")
    }
}

import Foundation
import NottyPOSIX
import NottyTestSupport
import Testing

/// A TCP connection to 127.0.0.1 made by hand, for requests no HTTP client would send.
struct RawConnection {
    let fd: Int32

    init(port: Int, receiveTimeout seconds: Int = 20) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SupportError("socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw SupportError("connect: \(reason)")
        }
    }

    /// This end's port (the service sees it as the peer's).
    var localPort: Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func send(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.send(fd, &bytes, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// Everything until the service closes the connection (or the receive timeout): the text,
    /// and whether it was closed.
    func readToClose() -> (text: String, closed: Bool) {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { data += buffer[0..<count]; continue }
            // A reset is a close too (the service closed with unread bytes of ours).
            return (String(decoding: data, as: UTF8.self), count == 0 || errno == ECONNRESET)
        }
    }

    func close() { Glibc.close(fd) }
}

@Suite("Hostile connections", .timeLimit(.minutes(5)), .serialized)
struct ConnectionTests {
    static func descriptors(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// A /proc file's text, read to its end (such files say they are empty: Foundation's
    /// readers, which go by the size, get nothing).
    static func procText(_ path: String) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { Glibc.close(descriptor) }
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// How many connections from `peers` (this end's ports) the service `pid` has accepted on
    /// `port`: the sockets of /proc/net/tcp between the two that are among its descriptors.
    /// (Counting descriptors against a baseline is fooled by other connections closing meanwhile.)
    static func accepted(by pid: Int32, port: Int, from peers: Set<Int>) -> Int {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let sockets = Set(
            files.compactMap { file -> Substring? in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(file)"), target.hasPrefix("socket:[")
                else { return nil }
                return target.dropFirst("socket:[".count).dropLast()
            })
        var count = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            for line in procText(table).split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9 else { continue }
                let local = fields[1].split(separator: ":"), remote = fields[2].split(separator: ":")
                guard local.count == 2, remote.count == 2, Int(local[1], radix: 16) == port,
                    let peer = Int(remote[1], radix: 16), peers.contains(peer), sockets.contains(fields[9])
                else { continue }
                count += 1
            }
        }
        return count
    }

    @Test(
        "1,000 heads the parser rejects get 400 and are closed; 300 heads that never end are cut after --header-timeout; the descriptors return to their baseline; /healthz and publishing answer throughout; a doorbell outlives the head timeout"
    )
    func malformedAndSlow() async throws {
        // The head timeout is well above what opening 300 connections takes on a loaded machine
        // (the service must hold them all at once before it cuts them): over 15 s once, with a
        // build running beside the whole suite.
        let headTimeout: Duration = .seconds(40)
        let world = try await TwoDevices(serveArguments: ["--header-timeout", "40s", "--idle-timeout", "5s"])
        let serve = world.service
        let pid = try #require(serve.process?.pid)
        // A doorbell (device B's poll --live) is open before and after: it is not a head.
        let logB = world.directory.appendingPathComponent("poll-b.log")
        let poll = try world.b.start(["poll", "--live"], log: logB)
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
        #expect(await eventually(timeout: .seconds(20)) { text(logB).contains("connection: live") }, "\(text(logB))")
        let doorbellOpened = ContinuousClock.now
        // The baseline once the publish has run its course: B was rung and has synced it.
        let before = try await world.publish("before")
        #expect(await eventually(timeout: .seconds(20)) { text(logB).contains(before) }, "B was not rung:\n\(text(logB))")
        let baseline = Self.descriptors(pid)
        report("descriptors of notty serve at the start: \(baseline)")

        // 300 slow heads, held open. Their reads wait past the head timeout (the default 20 s
        // did not, when the malformed rounds below ran in under 20 s).
        let slow = try await offThePool {
            try (0..<300).map { _ in
                let connection = try RawConnection(port: serve.port, receiveTimeout: Int(headTimeout.components.seconds) * 3)
                connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                return connection
            }
        }
        defer { for connection in slow { connection.close() } }
        // (The service accepts them as it goes: wait until it holds them.)
        let peers = Set(slow.map(\.localPort))
        #expect(
            await eventually(timeout: .seconds(60)) { Self.accepted(by: pid, port: serve.port, from: peers) == 300 },
            "the slow connections were not open at the service (\(Self.accepted(by: pid, port: serve.port, from: peers)) of 300)")
        report("with 300 slow heads: \(Self.descriptors(pid))")

        // 1,000 malformed heads (ESC and BEL in a header value), 100 at a time; /healthz and a
        // publish between each hundred.
        var answered = 0, closed = 0
        var healthy = 0, published = 0
        for round in 0..<10 {
            let results = try await offThePool {
                try (0..<100).map { index -> (String, Bool) in
                    let connection = try RawConnection(port: serve.port)
                    defer { connection.close() }
                    let evil = index % 2 == 0 ? "\u{1b}[31m" : "\u{07}"
                    connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Evil: a\(evil)b\r\n\r\n")
                    return connection.readToClose()
                }
            }
            answered += results.filter { $0.0.hasPrefix("HTTP/1.1 400") }.count
            closed += results.filter(\.1).count
            let health = try await Repository.run(["curl", "-s", "--max-time", "5", "\(serve.url)/healthz"])
            if health.output == #"{"status":"ok"}"# { healthy += 1 }
            if (try? await world.publish("round \(round)")) != nil { published += 1 }
        }
        report("malformed: \(answered) of 1000 answered 400, \(closed) closed by the service; healthz \(healthy)/10, publishes \(published)/10")
        #expect(answered == 1000 && closed == 1000)
        #expect(healthy == 10 && published == 10)

        // The slow ones are cut by the service (each read ends: closed), and the descriptors
        // come back.
        let cut = try await offThePool { slow.map { $0.readToClose() } }
        #expect(
            cut.allSatisfy { $0.closed && $0.text.isEmpty },
            "slow heads were answered or not cut: \(cut.filter { !$0.closed || !$0.text.isEmpty }.prefix(3))")
        let start = ContinuousClock.now
        #expect(
            await eventually(timeout: .seconds(30)) { Self.descriptors(pid) <= baseline },
            "descriptors: \(Self.descriptors(pid)), baseline \(baseline)")
        report("descriptors back to \(Self.descriptors(pid)) (baseline \(baseline)) \(start.duration(to: .now)) after the slow heads were cut")

        // The doorbell lived through it all, twice the head timeout at least: still one live
        // connection, still told.
        let lived = doorbellOpened.duration(to: .now)
        if lived < headTimeout * 2 { try await Task.sleep(for: headTimeout * 2 - lived) }
        let id = try await world.publish("after")
        #expect(try await eventually(timeout: .seconds(10)) { text(logB).contains(id) }, "the doorbell did not survive:\n\(text(logB))")
        #expect(text(logB).components(separatedBy: "connection: live").count == 2, "the doorbell was cut and reconnected:\n\(text(logB))")
    }

    @Test(
        "--max-connections: one more connection is answered 503 with a reason and closed; freed, the service takes new ones. --idle-timeout closes a kept-alive connection left idle"
    )
    func connectionLimit() async throws {
        let directory = Repository.temporaryDirectory("notty-limit")
        defer { try? FileManager.default.removeItem(at: directory) }
        // One I/O thread (the default on 2 cores): connections are accepted and counted on it
        // one after another, in the order they reached the listening socket.
        let serve = try await ServeProcess(
            directory: directory,
            extraArguments: [
                "--max-connections", "20", "--header-timeout", "60s", "--idle-timeout", "2s",
                "--io-threads", "1",
            ])
        defer { serve.stop() }
        let pid = try #require(serve.process?.pid)
        // Kept alive after one answer, then idle: closed by the service after about 2 s.
        let start = ContinuousClock.now
        let idle = try await offThePool { () throws -> (String, Bool) in
            let connection = try RawConnection(port: serve.port)
            defer { connection.close() }
            connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            return connection.readToClose()
        }
        let waited = start.duration(to: .now)
        #expect(idle.0.hasPrefix("HTTP/1.1 200") && idle.1 && waited >= .seconds(1.5), "\(idle) after \(waited)")
        report("an idle kept-alive connection was closed \(waited) after its request (--idle-timeout 2s)")
        let held = try await offThePool {
            try (0..<20).map { _ in
                let connection = try RawConnection(port: serve.port)
                connection.send("GET /healthz HTTP/1.1\r\n")
                return connection
            }
        }
        // The service has accepted all 20 before the 21st connects; on its one I/O thread each
        // was counted as it was accepted, so the 21st is counted after them.
        let peers = Set(held.map(\.localPort))
        #expect(
            await eventually(timeout: .seconds(10)) { Self.accepted(by: pid, port: serve.port, from: peers) == 20 },
            "the held connections were not open at the service (\(Self.accepted(by: pid, port: serve.port, from: peers)) of 20)")
        let refused = try await offThePool { () throws -> (String, Bool) in
            let connection = try RawConnection(port: serve.port)
            defer { connection.close() }
            connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            return connection.readToClose()
        }
        #expect(refused.0.hasPrefix("HTTP/1.1 503") && refused.0.contains("--max-connections") && refused.1, "\(refused)")
        for connection in held { connection.close() }
        #expect(
            await eventually(timeout: .seconds(10)) {
                (try? await Repository.run(["curl", "-s", "--max-time", "5", "\(serve.url)/healthz"]).output) == #"{"status":"ok"}"#
            })
    }

    @Test(
        "password spraying from one address: after 100 failures in 5 minutes the address gets 429; notty admin lockouts lists and clears it, and user lockouts too"
    )
    func guessingFromOneAddress() async throws {
        let directory = Repository.temporaryDirectory("notty-guess")
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await ServeProcess(directory: directory)
        defer { serve.stop() }
        func signIn(_ user: String, _ password: String) async throws -> String {
            try await Repository.run([
                "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                "-d", "grant_type=password&username=\(user)&password=\(password)", "\(serve.url)/oauth2/v2.0/token",
            ]).output
        }
        let spray = try await Repository.run([
            "sh", "-c",
            """
            for i in $(seq 100); do curl -s -o /dev/null -w '%{http_code} ' --max-time 20 -d "grant_type=password&username=name$i&password=x" \(serve.url)/oauth2/v2.0/token; done
            """,
        ])
        #expect(spray.output.split(separator: " ").allSatisfy { $0 == "400" }, "\(spray.output)")
        #expect(try await signIn("alice", "s3cret-pw") == "429", "the address is not locked after 100 failures")
        let listed = try await serve.admin.run(["admin", "lockouts"])
        #expect(listed.status == 0 && listed.out.contains("address:127.0.0.1  locked for"), "\(listed.out)\(listed.err)")
        #expect(try await serve.admin.run(["admin", "lockouts", "clear", "address:127.0.0.1"]).out == "cleared 1 key(s)\n")
        #expect(try await signIn("alice", "s3cret-pw") == "200")

        for n in 1...10 { _ = try await signIn("alice", "wrong\(n)") }
        #expect(try await signIn("alice", "s3cret-pw") == "429")
        let json = try await serve.admin.run(["admin", "lockouts", "list", "--json"])
        #expect(json.out.contains(#""key":"user:alice""#) && json.out.contains(#""strikes":1"#), "\(json.out)")
        #expect(try await serve.admin.run(["admin", "lockouts", "clear", "user:Alice"]).status == 0)
        #expect(try await signIn("alice", "s3cret-pw") == "200")
        let unknown = try await serve.admin.run(["admin", "lockouts", "clear", "user:nobody"])
        #expect(unknown.status == 1 && unknown.err.hasPrefix("notty: no failed sign-ins for user:nobody"), "\(unknown.err)")
    }
}

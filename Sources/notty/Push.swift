import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine
import NottyCore
import NottyStore
import NottySync

struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Process a push payload that reached this device some other way.",
        discussion: """
            Reads one JSON payload from FILE (or standard input): notty's own \
            {"notty":{"v":1,"server":…,"user":…,"type":"changed","cursor":…}}, a doorbell frame, \
            or one wrapped by APNs ("aps" + "notty"), FCM ({"data":{"notty":"…"}}) or ntfy \
            ({"event":"message","message":"…"}). Then syncs, or applies a full payload that \
            follows on from this device's cursor.

            Exit status: 0 processed; 3 not a notty payload (nothing done); 4 meant for another \
            server or user (nothing done); 1 failed (the next sync catches up).
            """)

    @Argument(help: ArgumentHelp("The payload file (default: standard input).", valueName: "file")) var file: String?

    static let maxBytes = 8 << 20

    func run() async throws {
        // Nothing touches the store until the payload is known to be ours.
        let data = try read()
        let payload: PushPayload
        do {
            payload = try PushPayload.parse(data)
        } catch {
            warn("not a notty payload: \(error)")
            throw ExitCode(3)
        }
        let local = Device()
        guard let credentials = try? local.credentialsFile.load() else {
            warn("not signed in on this device: run notty login first")
            throw ExitCode(1)
        }
        if let server = payload.server, !PushPayload.sameServer(server, credentials.server) {
            warn("this payload is for \(server), this device is signed in to \(credentials.server): nothing done")
            throw ExitCode(4)
        }
        if let user = payload.user, user.caseInsensitiveCompare(credentials.userName) != .orderedSame {
            warn("this payload is for user \(user), this device is signed in as \(credentials.userName): nothing done")
            throw ExitCode(4)
        }
        do {
            let (_, _, engine) = try await local.session(timeout: 10)
            let applied = try await engine.receive(payload.frame)
            if !applied { try await engine.flush() }
        } catch {
            warn("\(error) (the next sync catches up)")
            throw ExitCode(1)
        }
    }

    /// The payload; exit 1 when it cannot be read, 3 when it is too large to be notty's.
    private func read() throws -> Data {
        let handle: FileHandle
        if let file {
            guard let opened = FileHandle(forReadingAtPath: file) else {
                warn("cannot read \(file)")
                throw ExitCode(1)
            }
            handle = opened
        } else {
            handle = .standardInput
        }
        var data = Data()
        while let chunk = try handle.read(upToCount: 1 << 16), !chunk.isEmpty {
            data.append(chunk)
            if data.count > Self.maxBytes {
                warn("the payload is too large (over \(Self.maxBytes >> 20) MiB): not a notty payload")
                throw ExitCode(3)
            }
        }
        return data
    }
}

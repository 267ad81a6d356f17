import Foundation
import Hummingbird
import HummingbirdTesting
import NottySecrets
import NottyTestSupport
import Testing

/// The mode bits of a file or folder (0o600, 0o700, …).
func mode(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
}

/// Whether any of `files` holds `text` anywhere in its bytes.
func anyHolds(_ files: [String], _ text: String) -> [String] {
    files.filter { file in (FileManager.default.contents(atPath: file)).map { $0.range(of: Data(text.utf8)) != nil } ?? false }
}

/// Secrets at rest with real processes: the files `notty serve` and `notty admin` make are
/// their user's alone whatever the umask; what users hand the service to act for them is sealed
/// in the store and its backups; a missing or wrong key stops the service in one line; a key is
/// rotated online, with a publish and a press meanwhile.
@Suite("Secrets at rest end to end", .timeLimit(.minutes(5)), .serialized)
struct SecretsAtRestTests {
    static let actionToken = "tk_action_7Hq2x9Zr"
    static let ntfyToken = "tk_ntfy_Pw4mK8sD"

    @Test(
        "under umask 022: the folder 0700, the store, its -wal and -shm, the key and a backup 0600; an action's Authorization header and an ntfy token are in none of their bytes, and the action still runs with its header"
    )
    func sealedAndPrivate() async throws {
        let before = umask(0o022)
        defer { umask(before) }
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let world = try await TwoDevices()
            let home = world.service.admin.home.path
            let store = home + "/server.sqlite"
            #expect(mode(home) == 0o700, "\(home): \(String(mode(home), radix: 8))")
            for file in [store, store + "-wal", store + "-shm", home + "/secret.key"] {
                #expect(mode(file) == 0o600, "\(file): \(String(mode(file), radix: 8))")
            }
            let id = try await world.publish(
                "Deploy web 1.42?",
                extra: [
                    "--action",
                    "http, Approve, http://127.0.0.1:\(port)/deploy, method=PUT, headers.Authorization=Bearer \(Self.actionToken), clear=true",
                ])
            let rule = try await world.a.run([
                "escalate", "add", "--after", "1h", "--to", "ntfy:https://\(Self.ntfyToken)@ntfy.example/alerts", "--name", "n",
            ])
            #expect(rule.status == 0, "\(rule.err)")
            // The owner still reads the target as given.
            #expect(try await world.a.run(["escalate", "--list", "--json"]).out.contains(Self.ntfyToken))
            let backup = world.directory.appendingPathComponent("backup.sqlite").path
            let backedUp = try await world.service.admin.run(["admin", "backup", backup])
            #expect(backedUp.status == 0, "\(backedUp.err)")
            #expect(mode(backup) == 0o600, "the backup: \(String(mode(backup), radix: 8))")
            for secret in [Self.actionToken, Self.ntfyToken] {
                #expect(anyHolds([store, store + "-wal", backup], secret).isEmpty, "\(secret) is in the clear")
            }
            // Sealed, not lost: the press sends the header.
            #expect(try await world.b.run(["sync"]).status == 0)
            let pressed = try await world.b.run(["act", id, "1"])
            #expect(pressed.status == 0 && pressed.out.contains("Approve: done"), "\(pressed.out) \(pressed.err)")
            let hit = try #require(recorder.matching("PUT", "/deploy").first)
            #expect((hit.headers["authorization"] ?? hit.headers["Authorization"]) == "Bearer \(Self.actionToken)")
        }
    }

    @Test(
        "the key: missing, unreadable, not a key or another store's stops notty serve in one line naming the file and what to do; --forget-sealed-secrets starts, and a sealed action then says it cannot run"
    )
    func wrongKeys() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let world = try await TwoDevices()
            let id = try await world.publish(
                "Restart?", extra: ["--action", "http, Restart, http://127.0.0.1:\(port)/restart, headers.X-Token=\(Self.actionToken)"])
            let unpressed = try await world.publish(
                "Reboot?", extra: ["--action", "http, Reboot, http://127.0.0.1:\(port)/reboot, headers.X-Token=\(Self.actionToken)"])
            await world.service.stop()
            let key = world.service.secretKeyFile
            let kept = key + ".kept"
            try FileManager.default.moveItem(atPath: key, toPath: kept)
            let other = world.directory.appendingPathComponent("other.key").path
            let garbageFile = world.directory.appendingPathComponent("garbage.key").path
            try "not a key\n".write(toFile: garbageFile, atomically: true, encoding: .utf8)
            chmod(garbageFile, 0o600)
            let serve = world.service.admin
            let missing = try await serve.run(["serve", "--port", "0"])
            #expect(
                missing.status == 1 && missing.err.contains("\(key) does not exist") && missing.err.contains("--secret-key-file"), "\(missing.err)")
            #expect(!FileManager.default.fileExists(atPath: key), "no key is made for a store that has one")
            let garbage = try await serve.run([
                "serve", "--port", "0", "--secret-key-file", world.directory.appendingPathComponent("garbage.key").path,
            ])
            #expect(garbage.status == 1 && garbage.err.contains("is not a notty secret key file"), "\(garbage.err)")
            // Another store's key (made for a fresh one).
            let made = try await NottyCLI(home: world.directory.appendingPathComponent("elsewhere")).run(
                ["admin", "user", "add", "bob", "--secret-key-file", other], input: "s3cret-pw\n")
            #expect(made.status == 0, "\(made.err)")
            let wrong = try await serve.run(["serve", "--port", "0", "--secret-key-file", other])
            #expect(wrong.status == 1 && wrong.err.contains("were sealed with key") && wrong.err.contains("--forget-sealed-secrets"), "\(wrong.err)")
            for result in [missing, garbage, wrong] { #expect(result.err.split(separator: "\n").count == 1, "\(result.err)") }

            // Back with its key: as before.
            try FileManager.default.moveItem(atPath: kept, toPath: key)
            try await world.service.start()
            #expect(try await world.b.run(["act", id, "1"]).out.contains("Restart: done"))
            // Lost for good: it starts, and the sealed action says why it cannot run.
            await world.service.stop()
            try FileManager.default.removeItem(atPath: key)
            try await world.service.start(extraArguments: ["--forget-sealed-secrets"])
            #expect(try await world.b.run(["sync"]).status == 0)
            let lost = try await world.b.run(["act", unpressed, "1"])
            #expect(lost.status != 0 && lost.err.contains("sealed with secret key"), "\(lost.out) \(lost.err)")
        }
    }

    @Test(
        "notty admin rotate-key NEWFILE while notty serve serves: a publish and a press meanwhile work; afterwards every secret is under the new key, the store's key file holds it, and a restart opens everything"
    )
    func rotation() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let world = try await TwoDevices()
            let first = try await world.publish(
                "Before", extra: ["--action", "http, Go, http://127.0.0.1:\(port)/before, headers.X-Token=\(Self.actionToken)"])
            let oldKey = try String(contentsOfFile: world.service.secretKeyFile, encoding: .utf8)
            let newFile = world.directory.appendingPathComponent("new.key").path
            let rotating = Task { try await world.service.admin.run(["admin", "rotate-key", newFile]) }
            // During the rotation (it runs at least 12 s once it has written the new key file).
            #expect(await eventually(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: newFile) }, "rotate-key did not start")
            let during = try await world.publish(
                "During", extra: ["--action", "http, Go, http://127.0.0.1:\(port)/during, headers.X-Token=\(Self.actionToken)"])
            #expect(try await world.b.run(["sync"]).status == 0)
            let pressed = try await world.b.run(["act", first, "1"])
            #expect(pressed.status == 0 && pressed.out.contains("Go: done"), "\(pressed.err)")
            let rotated = try await rotating.value
            #expect(rotated.status == 0 && rotated.out.contains("secret.key now holds it"), "\(rotated.out) \(rotated.err)")
            #expect(mode(newFile) == 0o600)
            let newKey = try String(contentsOfFile: world.service.secretKeyFile, encoding: .utf8)
            #expect(newKey != oldKey)
            #expect(try await world.b.run(["sync"]).status == 0)
            #expect(try await world.b.run(["act", during, "1"]).out.contains("Go: done"))
            // Restarted with the rotated key file: everything opens.
            await world.service.stop()
            try await world.service.start()
            let again = try await world.publish(
                "After", extra: ["--action", "http, Go, http://127.0.0.1:\(port)/after, headers.X-Token=\(Self.actionToken)"])
            #expect(try await world.b.run(["sync"]).status == 0)
            #expect(try await world.b.run(["act", again, "1"]).out.contains("Go: done"))
            #expect(Set(recorder.paths()) == ["POST /before", "POST /during", "POST /after"], "\(recorder.paths())")
            let store = world.service.admin.home.path + "/server.sqlite"
            #expect(anyHolds([store, store + "-wal"], Self.actionToken).isEmpty)
        }
    }
}

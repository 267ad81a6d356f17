import Foundation
import NottyComposition
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyRecords
@testable import NottySecrets
@testable import NottyService
@testable import NottyServiceSQLite

@Suite("Secrets at rest: sealing, opening, sweeping, rotating")
struct SecretBoxTests {
    @Test(
        "a value sealed opens to itself under its key only; the same value seals to the same text; clear text opens as it is; a damaged one says so")
    func sealAndOpen() throws {
        let box = SecretBox.ephemeral()
        let sealed = box.seal("ntfy:https://tk_secret@ntfy.example/alerts")
        #expect(sealed.stored.hasPrefix("sealed:1:\(box.primary.id):"))
        #expect(!sealed.stored.contains("tk_secret") && !"\(sealed)".contains("tk_secret"), "printed, a sealed value shows nothing of itself")
        #expect(try box.open(sealed) == "ntfy:https://tk_secret@ntfy.example/alerts")
        #expect(box.seal("ntfy:https://tk_secret@ntfy.example/alerts") == sealed, "the same value, the same text: the store compares targets")
        #expect(box.seal("ntfy:https://tk_other@ntfy.example/alerts") != sealed)
        #expect(box.seal(sealed.stored) == sealed, "never sealed twice")
        #expect(try box.open(stored: "webhook:https://clear.example/") == "webhook:https://clear.example/")
        let other = SecretBox.ephemeral()
        #expect(throws: SecretBox.OpenError.unknownKey(box.primary.id)) { try other.open(sealed) }
        // One bit of the box changed, inside its base64 (not the padding's spare bits at its end).
        var bytes = Array(sealed.stored.utf8)
        let inside = "sealed:1:\(box.primary.id):".utf8.count + 20
        bytes[inside] = bytes[inside] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: SecretBox.OpenError.damaged) { try box.open(stored: String(decoding: bytes, as: UTF8.self)) }
        #expect(box.shownTarget(sealed.stored) == "ntfy:https://…@ntfy.example/alerts")
        #expect(box.shownTarget(sealed.stored, toOwner: false) == "ntfy:https://ntfy.example:443")
        #expect(other.shownTarget(sealed.stored).contains("secret key this service does not have"))
        // A key file's line.
        let key = try #require(SecretBox.Key(line: box.primary.line))
        #expect(key == box.primary)
        #expect(SecretBox.Key(line: "not a key") == nil)
        #expect(SecretBox.Key(line: Data(repeating: 1, count: 16).base64EncodedString()) == nil)
    }

    @Test("an http action's URL, method, headers and body are sealed together; its label and clear stay readable; opened, it is whole again")
    func actions() async throws {
        let box = SecretBox.ephemeral()
        var action = NotificationAction(
            kind: .http, label: "Silence 1h", url: "https://am.example/api/v2/silences", method: "POST",
            headers: ["Authorization": "Bearer s3cret-token"], body: #"{"matchers":[]}"#, clear: true)
        action.template = true
        let view = NotificationAction(kind: .view, label: "Runbook", url: "https://wiki.example/runbook")
        let stored = try #require(box.storedActions([action, view]))
        for secret in ["s3cret-token", "am.example", "silences", "matchers", "POST"] { #expect(!stored.contains(secret), "\(secret) in \(stored)") }
        let read = try #require(NotificationAction.list(JSONValue(jsonText: stored)))
        #expect(read.map(\.label) == ["Silence 1h", "Runbook"])
        #expect(read[0].clear && read[0].url == nil && read[0].sealed != nil)
        #expect(read[1] == view)
        #expect(try await box.opened(read) == [action, view])
        #expect(box.resealedActions(stored) == nil, "sealed under the primary: nothing to do")
        let clear = try #require(NotificationAction.storedText([action, view]))
        let resealed = try #require(box.resealedActions(clear))
        #expect(!resealed.contains("s3cret-token"))
        #expect(try await box.opened(try #require(NotificationAction.list(JSONValue(jsonText: resealed)))) == [action, view])
    }

    @Test(
        "the store's key: the first box makes it its own; another key is refused; a rotation hands the new key over to every instance, and a sweep seals what is clear or under the old key",
        arguments: Backend.available
    )
    func keysAndSweep(backend: Backend) async throws {
        let directory = Repository.temporaryDirectory("notty-secrets")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try await backend.makeStorage(in: directory)
        let old = SecretBox.ephemeral()
        #expect(try await SecretKeeping.verify(old, storage: storage) == .first)
        #expect(try await SecretKeeping.verify(SecretBox(keys: [old.primary]), storage: storage) == .matches)
        let stranger = SecretBox.ephemeral()
        #expect(try await SecretKeeping.verify(stranger, storage: storage) == .otherKey(old.primary.id))
        // Clear secrets from before sealing, in every kind of column.
        let service = NotificationService(storage: storage, secrets: old)
        let user = try await service.admin.addUser(name: "alice", password: "s3cret-pw")
        try await storage.insertSubscription(
            SubscriptionRecord(
                id: "hook1", userId: user.id, targetHostName: "am.example", deviceId: "d1", deviceName: nil, platform: "webhook", createdAt: Date(),
                expiresAt: SubscriptionRecord.never, webhookHash: "h", webhookSecret: Sealed(stored: "whsec_clear"),
                alertmanagerURL: Sealed(stored: "http://am.example:9093")))
        #expect(try await SecretKeeping.sweep(old, storage: storage) == 2)
        #expect(try await SecretKeeping.sweep(old, storage: storage) == 0, "a second sweep has nothing to do")
        let raw = try #require(try await storage.subscription(id: "hook1"))
        #expect(raw.webhookSecret.map { SecretBox.keyId($0.stored) } == old.primary.id)
        #expect(try old.open(try #require(raw.webhookSecret)) == "whsec_clear")

        // Another instance, on the old key, meets a value sealed under the new one while the
        // rotation hands it over, and seals with it once the store's key is the new one.
        let instance = SecretBox(keys: [old.primary])
        SecretKeeping.install(instance, storage: storage)
        let new = SecretBox.Key.random()
        try await storage.setSecretKeyRecord("key:\(new.id)", value: old.seal(new.line).stored)
        #expect(try await instance.openFetching(SecretBox(keys: [new]).seal("x")) == "x")
        let rotation = try await SecretKeeping.rotate(old, to: new, storage: storage, settle: .zero)
        #expect(rotation.resealed == 2)
        #expect(old.primary == new)
        #expect(try await SecretKeeping.follow(instance, storage: storage))
        #expect(instance.primary == new)
        let rotated = try #require(try await storage.subscription(id: "hook1")?.webhookSecret)
        #expect(SecretBox.keyId(rotated.stored) == new.id)
        #expect(try await storage.secretKeyRecord("key:\(new.id)") == nil, "the hand-over is taken away when the rotation is done")
        #expect(try await SecretKeeping.verify(SecretBox(keys: [new]), storage: storage) == .matches)
        #expect(try await SecretKeeping.verify(SecretBox(keys: [old.all[1]]), storage: storage) == .otherKey(new.id))
        try await storage.close()
    }
}

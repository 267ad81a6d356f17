import Foundation
import NottyCore

/// The store's side of the secret key (docs/GUIDE.md, "Secrets at rest"): which key its sealed
/// secrets expect (the `check` record, a known text sealed under it), the sweep that seals
/// what is clear or under an older key, and a rotation's hand-over of the new key to every
/// instance (the `key:ID` record: the new key sealed under the one before it, kept only while
/// the rotation runs).
public enum SecretKeeping {
    static let checkText = "notty secret key check"
    static let check = "check"
    /// The key a whole sweep last left every secret under (a start need not sweep again).
    static let swept = "swept"
    static func handover(_ id: String) -> String { "key:" + id }

    /// What the store says of a box's keys.
    public enum Verdict: Sendable, Equatable {
        /// The store expects one of the box's keys (now the box's primary).
        case matches
        /// Nothing was sealed yet: the box's primary is the store's key from now on.
        case first
        /// The store's secrets were sealed with another key, which the box does not have.
        case otherKey(String)
    }

    /// Checks `box` against the store: a key the store expects that the box knows becomes its
    /// primary; one handed over by a rotation under way is taken. `forget`: a store sealed with
    /// a key that is lost takes the box's key from now on (what was sealed with the lost one
    /// says so when used).
    public static func verify(_ box: SecretBox, storage: any SecretStorage, forget: Bool = false) async throws -> Verdict {
        guard let record = try await storage.secretKeyRecord(check), let id = SecretBox.keyId(record) else {
            try await storage.setSecretKeyRecord(check, value: box.seal(checkText).stored)
            return .first
        }
        if let key = await known(id, box: box, storage: storage) {
            if box.primary != key { box.adopt(key) }
            return .matches
        }
        guard forget else { return .otherKey(id) }
        try await storage.setSecretKeyRecord(check, value: box.seal(checkText).stored)
        return .matches
    }

    /// The key `id`: the box's own, or as a rotation handed it over.
    static func known(_ id: String, box: SecretBox, storage: any SecretStorage) async -> SecretBox.Key? {
        if let key = box.all.first(where: { $0.id == id }) { return key }
        return await handedOver(id, box: box, storage: storage)
    }

    /// The key `id` as a rotation handed it over, if the box opens it.
    static func handedOver(_ id: String, box: SecretBox, storage: any SecretStorage) async -> SecretBox.Key? {
        guard let sealed = try? await storage.secretKeyRecord(handover(id)), let line = try? box.open(Sealed(stored: sealed)),
            let key = SecretBox.Key(line: line), key.id == id
        else { return nil }
        return key
    }

    /// Lets `box` take keys a rotation hands over while the service runs.
    public static func install(_ box: SecretBox, storage: any SecretStorage) {
        box.setFetch { [weak box] id in
            guard let box else { return nil }
            return await handedOver(id, box: box, storage: storage)
        }
    }

    /// What the periodic job does: a rotation elsewhere made a new key the store's, so this
    /// instance seals with it from now on. True when the key changed.
    @discardableResult
    public static func follow(_ box: SecretBox, storage: any SecretStorage) async throws -> Bool {
        guard let record = try await storage.secretKeyRecord(check), let id = SecretBox.keyId(record), id != box.primary.id else { return false }
        guard let key = await known(id, box: box, storage: storage) else { return false }
        box.adopt(key)
        return true
    }

    /// How a column's stored value is sealed anew under the box's primary key (nil: as it is).
    static func reseal(_ column: SecretColumn, box: SecretBox) -> @Sendable (String) -> String? {
        switch column {
        case .notificationActions:
            return { box.resealedActions($0) }
        case .ruleTargets:
            return { text in
                guard case .array(let items)? = JSONValue(jsonText: text) else { return nil }
                var changed = false
                let targets = items.map { item -> JSONValue in
                    // A team policy's `oncall`, `team` and `user:NAME` are words, not secrets.
                    guard case .string(let target) = item, PagingTarget(target) == nil, let resealed = box.resealed(target) else { return item }
                    changed = true
                    return .string(resealed)
                }
                return changed ? JSONValue.array(targets).jsonText : nil
            }
        case .deliveryTargets, .sentTargets, .statusTargets, .webhookSecrets, .alertmanagerURLs, .contactTargets, .webPushKeys, .webPushAuth:
            return { box.resealed($0) }
        }
    }

    /// Seals every stored secret that is clear (from before secrets were sealed) or sealed
    /// under another key the box has, a batch at a time. Answers how many were written.
    @discardableResult
    public static func sweep(_ box: SecretBox, storage: any SecretStorage, batch: Int = 500) async throws -> Int {
        var written = 0
        for column in SecretColumn.allCases {
            let reseal = reseal(column, box: box)
            var position: String?
            repeat {
                let step = try await storage.resealSecrets(column, after: position, limit: batch, reseal)
                written += step.written
                position = step.position
            } while position != nil
        }
        try await storage.setSecretKeyRecord(swept, value: box.primary.id)
        return written
    }

    /// What a start does: ``sweep(_:storage:batch:)`` unless a whole sweep already left every
    /// secret under the box's key (nothing this build writes is clear, and a rotation sweeps
    /// itself), so that a start reads no table it need not.
    public static func sweepIfNeeded(_ box: SecretBox, storage: any SecretStorage) async throws -> Int {
        if try await storage.secretKeyRecord(swept) == box.primary.id { return 0 }
        return try await sweep(box, storage: storage)
    }

    /// How a rotation went.
    public struct Rotation: Sendable {
        public var resealed: Int
        public var passes: Int
    }

    /// Rotates to `new` online: hands it over to every instance (sealed under the current
    /// key), makes it the store's key, and seals everything under it, again until a pass finds
    /// nothing to seal once `settle` has gone by (the time instances take to follow: their job
    /// looks every 10 s); then takes the hand-over away.
    public static func rotate(
        _ box: SecretBox, to new: SecretBox.Key, storage: any SecretStorage, settle: Duration = .seconds(12),
        log: (String) -> Void = { _ in }
    ) async throws -> Rotation {
        if case .otherKey(let id) = try await verify(box, storage: storage) {
            throw ValidationError("the store's secrets were sealed with key \(id), not with the key given")
        }
        if new != box.primary {
            try await storage.setSecretKeyRecord(handover(new.id), value: box.seal(new.line).stored)
            box.adopt(new)
            try await storage.setSecretKeyRecord(check, value: box.seal(checkText).stored)
        }
        let started = ContinuousClock.now
        var rotation = Rotation(resealed: 0, passes: 0)
        while true {
            let written = try await sweep(box, storage: storage)
            rotation.resealed += written
            rotation.passes += 1
            log("pass \(rotation.passes): \(written) sealed anew")
            if written == 0 && ContinuousClock.now - started >= settle { break }
            if rotation.passes >= 100 { break }
            try await Task.sleep(for: .seconds(2))
        }
        try await storage.setSecretKeyRecord(handover(new.id), value: nil)
        return rotation
    }
}

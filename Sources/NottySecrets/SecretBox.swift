import Crypto
import Foundation
import NottyCore
import Synchronization

/// What users hand the service to act for them, sealed in the store (docs/GUIDE.md, "Secrets at
/// rest"): an `http` action's URL, method, headers and body; escalation targets (their
/// credentials); a webhook's secret and Alertmanager URL; a delayed publish. Sealed with
/// AES-GCM under a key kept outside the store (`secret.key` beside it, or
/// `--secret-key-file`); tokens and passwords are only hashed, as ever.
///
/// A sealed value is text: `sealed:1:KEYID:BASE64` (the nonce, the ciphertext and the tag). The
/// nonce is made from the value itself (SHA-256 under a key of its own, as AES-GCM-SIV
/// does): the same value sealed twice under one key is the same text, so that the store can
/// still compare targets (`escalation_sent`'s key) and a value is never sealed twice with one
/// nonce. It shows that two values are equal, and nothing else.
///
/// Several keys may be known: the first seals; the others (older ones, during a rotation) open.
public final class SecretBox: Sendable {
    /// One key: its id (a hash's first 8 hex digits) and the two keys made from it.
    public struct Key: Sendable, Equatable {
        public let id: String
        let material: SymmetricKey
        let sealing: SymmetricKey
        let nonces: SymmetricKey

        /// A key of 32 bytes.
        public init(bytes: some DataProtocol) {
            material = SymmetricKey(data: Data(bytes))
            let digest = SHA256.hash(data: Data("notty secret key id".utf8) + Data(bytes))
            id = String(Hex.string(digest).prefix(8))
            sealing = HKDF<SHA256>.deriveKey(inputKeyMaterial: material, info: Data("notty sealing".utf8), outputByteCount: 32)
            nonces = HKDF<SHA256>.deriveKey(inputKeyMaterial: material, info: Data("notty nonces".utf8), outputByteCount: 32)
        }

        /// A new random key.
        public static func random() -> Key { Key(bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }) }

        /// The key as a key file's line: base64 of its 32 bytes.
        public var line: String { material.withUnsafeBytes { Data($0) }.base64EncodedString() }

        /// A key file's line, or nil when it is not one.
        public init?(line: String) {
            guard let data = Data(base64Encoded: line.trimmingCharacters(in: .whitespaces)), data.count == 32 else { return nil }
            self.init(bytes: data)
        }

        public static func == (a: Key, b: Key) -> Bool { a.id == b.id }
    }

    /// Why a sealed value cannot be opened.
    public enum OpenError: Error, Sendable, Equatable, CustomStringConvertible {
        /// Sealed under a key this service does not have (lost with a key file).
        case unknownKey(String)
        /// Not what was sealed (changed in the store, or cut).
        case damaged

        public var description: String {
            switch self {
            case .unknownKey(let id):
                "it was sealed with secret key \(id), which this service does not have (the key file of the store it came from): give it again"
            case .damaged: "its sealed form is damaged"
            }
        }
    }

    static let prefix = "sealed:1:"
    private let keys: Mutex<[Key]>
    /// Looks up a key this service does not have yet (one a rotation handed over in the store):
    /// set by the service, nil in a box made for a test.
    private let fetch: Mutex<(@Sendable (String) async -> Key?)?> = Mutex(nil)

    /// `keys`: the first seals, all open.
    public init(keys: [Key]) {
        precondition(!keys.isEmpty, "a SecretBox needs a key")
        self.keys = Mutex(keys)
    }

    /// A box with one new random key (tests, the demo).
    public static func ephemeral() -> SecretBox { SecretBox(keys: [.random()]) }

    /// The key that seals.
    public var primary: Key { keys.withLock { $0[0] } }
    public var all: [Key] { keys.withLock { $0 } }

    /// `key` seals from now on; the others still open.
    public func adopt(_ key: Key) {
        keys.withLock { keys in
            keys.removeAll { $0.id == key.id }
            keys.insert(key, at: 0)
        }
    }

    /// How to find a key met in the store that this box does not have.
    public func setFetch(_ fetch: @escaping @Sendable (String) async -> Key?) {
        self.fetch.withLock { $0 = fetch }
    }

    public static func isSealed(_ text: String) -> Bool { text.hasPrefix(prefix) }

    /// The key id of a sealed value (nil for clear text).
    public static func keyId(_ text: String) -> String? {
        guard isSealed(text) else { return nil }
        let rest = text.dropFirst(prefix.count)
        return rest.firstIndex(of: ":").map { String(rest[..<$0]) }
    }

    /// `text` sealed under the primary key (already sealed text as it is).
    public func seal(_ text: String) -> Sealed {
        Sealed(stored: sealedText(text))
    }

    /// ``seal(_:)`` as the stored text, for a column that holds clear and sealed values alike
    /// (a rule's targets beside its paging targets, a delivery's target).
    package func sealedText(_ text: String) -> String {
        if Self.isSealed(text) { return text }
        let key = primary
        let plain = Data(text.utf8)
        // The nonce: the first 96 bits of SHA-256 over the nonce key and the value (a keyed
        // hash: the same value gives the same nonce, two values two nonces, and nothing is
        // learnt without the key; it costs a third of an HMAC's time).
        var hash = SHA256()
        key.nonces.withUnsafeBytes { hash.update(bufferPointer: $0) }
        hash.update(data: plain)
        let nonce = try! AES.GCM.Nonce(data: Array(hash.finalize()).prefix(12))
        let box = try! AES.GCM.seal(plain, using: key.sealing, nonce: nonce)
        return Self.prefix + key.id + ":" + box.combined!.base64EncodedString()
    }

    /// The clear text of a sealed value.
    public func open(_ sealed: Sealed) throws(OpenError) -> String {
        try open(stored: sealed.stored)
    }

    /// ``open(_:)``, asking the store for a key it does not have yet.
    public func openFetching(_ sealed: Sealed) async throws(OpenError) -> String {
        try await openFetching(stored: sealed.stored)
    }

    /// The clear text of a stored column's `text`: sealed under a known key, opened; clear text
    /// (from before it was sealed, or a value never sealed, such as a paging target) as it is.
    public func open(stored text: String) throws(OpenError) -> String {
        guard Self.isSealed(text) else { return text }
        let rest = text.dropFirst(Self.prefix.count)
        guard let colon = rest.firstIndex(of: ":") else { throw .damaged }
        let id = String(rest[..<colon])
        guard let key = keys.withLock({ $0.first { $0.id == id } }) else { throw .unknownKey(id) }
        return try Self.open(rest[rest.index(after: colon)...], key: key)
    }

    /// ``open(stored:)``, asking the store for a key it does not have yet (a rotation under way
    /// on another instance).
    public func openFetching(stored text: String) async throws(OpenError) -> String {
        do {
            return try open(stored: text)
        } catch .unknownKey(let id) {
            guard let fetch = fetch.withLock({ $0 }), let key = await fetch(id), key.id == id else { throw .unknownKey(id) }
            keys.withLock { if !$0.contains(key) { $0.append(key) } }
            return try open(stored: text)
        }
    }

    private static func open(_ encoded: Substring, key: Key) throws(OpenError) -> String {
        guard let data = Data(base64Encoded: String(encoded)), let box = try? AES.GCM.SealedBox(combined: data),
            let plain = try? AES.GCM.open(box, using: key.sealing)
        else { throw .damaged }
        return String(decoding: plain, as: UTF8.self)
    }

    /// `text` sealed under the primary key when it is clear or sealed under another known key;
    /// nil when it is sealed under the primary already or cannot be opened (what a sweep
    /// changes).
    public func resealed(_ text: String) -> String? {
        if Self.keyId(text) == primary.id { return nil }
        guard let clear = try? open(stored: text) else { return nil }
        return sealedText(clear)
    }

    // MARK: - Actions

    /// What the `http` actions after the first carry in their `sealed` field: their parts are
    /// in the first one's.
    static let inFirst = "+"

    /// Actions as stored: the URL, method, headers and body of every `http` action sealed
    /// together, once per notification, in the first `http` action's `sealed` field (one seal
    /// per publish, however many actions); labels and `clear` stay readable (devices are shown
    /// those only, without opening anything).
    public func storedActions(_ actions: [NotificationAction]?) -> String? {
        guard let actions, !actions.isEmpty else { return nil }
        return NotificationAction.storedText(sealed(actions))
    }

    /// `actions` with the secret parts of their `http` actions sealed together (as they are when
    /// sealed already).
    func sealed(_ actions: [NotificationAction]) -> [NotificationAction] {
        let http = actions.filter { $0.kind == .http }
        guard !http.isEmpty, http.allSatisfy({ $0.sealed == nil }) else { return actions }
        let secrets = http.map { action -> NotificationAction in
            var secret = action
            secret.label = ""
            secret.clear = false
            return secret
        }
        var first = true
        let blob = sealedText(NotificationAction.storedText(secrets) ?? "[]")
        return actions.map { action in
            guard action.kind == .http else { return action }
            var stored = NotificationAction(kind: .http, label: action.label, clear: action.clear)
            stored.sealed = first ? blob : Self.inFirst
            first = false
            return stored
        }
    }

    /// `actions` as stored, their `http` actions whole again.
    public func opened(_ actions: [NotificationAction]) async throws(OpenError) -> [NotificationAction] {
        guard let blob = actions.first(where: { $0.kind == .http && $0.sealed != nil })?.sealed else { return actions }
        let text = try await openFetching(stored: blob)
        guard var secrets = NotificationAction.list(JSONValue(jsonText: text))?[...] else { throw .damaged }
        return try actions.map { (action) throws(OpenError) -> NotificationAction in
            guard action.kind == .http, action.sealed != nil else { return action }
            guard var whole = secrets.popFirst() else { throw .damaged }
            whole.label = action.label
            whole.clear = action.clear
            return whole
        }
    }

    /// A stored actions text sealed anew under the primary key (clear ones sealed), or nil when
    /// it needs no change.
    public func resealedActions(_ text: String) -> String? {
        guard let actions = NotificationAction.list(JSONValue(jsonText: text)), actions.contains(where: { $0.kind == .http }) else { return nil }
        if let index = actions.firstIndex(where: { $0.kind == .http && $0.sealed != nil && $0.sealed != Self.inFirst }) {
            guard let resealed = resealed(actions[index].sealed!) else { return nil }
            var copy = actions
            copy[index].sealed = resealed
            return NotificationAction.storedText(copy)
        }
        guard actions.allSatisfy({ $0.sealed == nil }) else { return nil }
        return NotificationAction.storedText(sealed(actions))
    }

    // MARK: - Escalation targets

    /// A target as a person reads it, sealed or not: to its owner without credentials, to
    /// anyone else (`toOwner: false`: a team's members, the log) only its kind, scheme, host and
    /// port (PROTOCOL.md §15).
    public func shownTarget(_ stored: String, toOwner: Bool = true) -> String {
        guard let clear = try? open(stored: stored) else { return "(a target sealed with a secret key this service does not have)" }
        guard let target = try? EscalationTarget(parsing: clear) else {
            // Not a target: a step's member target (user:bob, oncall) or a failed page's reason.
            return clear
        }
        return toOwner ? target.shown : target.shownToOthers
    }
}

/// A value sealed by a ``SecretBox`` (PROTOCOL.md §15): kept apart from clear text by the compiler —
/// a sealed field cannot be shown, compared with or sent as clear text, and only a box opens it.
/// Printing one prints nothing of it.
public struct Sealed: Sendable, Hashable, CustomStringConvertible {
    /// As the store keeps it: `sealed:1:KEYID:…` (or clear text written before sealing began,
    /// which ``SecretBox/open(_:)`` gives back as it is).
    public let stored: String

    public init(stored: String) {
        self.stored = stored
    }

    public var description: String { "(sealed)" }
}

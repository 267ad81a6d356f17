import Crypto
import Foundation
import NottyCore

/// Web Push's message encryption (RFC 8291, `aes128gcm` of RFC 8188) and the application
/// server's identification (RFC 8292, VAPID), with swift-crypto's P-256, HKDF and AES-GCM.
public enum WebPushCrypto {
    /// The record size written in every message's header: one record of at most this many
    /// bytes, so a plaintext of at most ``maxPlaintext``.
    static let recordSize: UInt32 = 4096
    /// The most a push service takes (4,096 bytes of body) less the header (86), the delimiter
    /// (1) and the tag (16).
    public static let maxPlaintext = 3993

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case badKey(String)
        case tooLong(Int)

        public var description: String {
            switch self {
            case .badKey(let why): why
            case .tooLong(let count): "a push message is at most \(WebPushCrypto.maxPlaintext) bytes; this one is \(count)"
            }
        }
    }

    /// Checks a browser's `keys` (`p256dh`: its uncompressed P-256 point, `auth`: 16 bytes, both
    /// base64url): nil when usable, else why not.
    public static func keyProblem(p256dh: String, auth: String) -> String? {
        guard let point = Data(base64URL: p256dh), point.count == 65, point.first == 0x04,
            (try? P256.KeyAgreement.PublicKey(x963Representation: point)) != nil
        else { return "keys.p256dh is not a P-256 public key (65 bytes, uncompressed, base64url) as PushSubscription.toJSON() gives it" }
        guard let secret = Data(base64URL: auth), secret.count == 16 else {
            return "keys.auth is not 16 bytes of base64url as PushSubscription.toJSON() gives it"
        }
        return nil
    }

    /// The message body for a browser whose subscription has `p256dh` (its public key, 65
    /// bytes) and `auth` (16 bytes). `salt` and `senderKey` are fresh for every message; the
    /// RFC's example gives them to show the same bytes.
    public static func encrypt(
        _ plaintext: Data, p256dh: Data, auth: Data, salt: Data? = nil, senderKey: P256.KeyAgreement.PrivateKey = .init()
    ) throws -> Data {
        guard plaintext.count <= maxPlaintext else { throw Failure.tooLong(plaintext.count) }
        guard auth.count == 16 else { throw Failure.badKey("the subscription's auth secret is not 16 bytes") }
        let browserKey: P256.KeyAgreement.PublicKey
        do { browserKey = try P256.KeyAgreement.PublicKey(x963Representation: p256dh) } catch {
            throw Failure.badKey("the subscription's p256dh is not a P-256 public key")
        }
        let salt = salt ?? Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let senderPublic = senderKey.publicKey.x963Representation
        let shared = try senderKey.sharedSecretFromKeyAgreement(with: browserKey)
        // RFC 8291 §3.3-3.4: IKM from the shared secret and the auth secret, bound to both keys.
        let keyInfo = Data("WebPush: info".utf8) + [0] + p256dh + senderPublic
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: keyInfo, outputByteCount: 32)
        // RFC 8188 §2.2-2.3: the content key and nonce (one record: sequence number 0).
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        let sealed = try AES.GCM.seal(
            plaintext + [2], using: cek, nonce: try AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))
        var header = salt
        withUnsafeBytes(of: recordSize.bigEndian) { header.append(contentsOf: $0) }
        header.append(UInt8(senderPublic.count))
        header.append(senderPublic)
        return header + sealed.ciphertext + sealed.tag
    }

    /// Opens a message made by ``encrypt(_:p256dh:auth:salt:senderKey:)`` with the browser's
    /// private key: what a browser does (the tests check the service's messages with it).
    public static func decrypt(_ body: Data, browserKey: P256.KeyAgreement.PrivateKey, auth: Data) throws -> Data {
        let bytes = [UInt8](body)
        guard bytes.count > 21 + 16 else { throw Failure.badKey("too short for an aes128gcm message") }
        let salt = Data(bytes[0..<16])
        let idLength = Int(bytes[20])
        guard bytes.count >= 21 + idLength + 17 else { throw Failure.badKey("too short for its key id") }
        let senderPublic = Data(bytes[21..<(21 + idLength)])
        let shared = try browserKey.sharedSecretFromKeyAgreement(with: try P256.KeyAgreement.PublicKey(x963Representation: senderPublic))
        let keyInfo = Data("WebPush: info".utf8) + [0] + browserKey.publicKey.x963Representation + senderPublic
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: keyInfo, outputByteCount: 32)
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        let record = Data(bytes[(21 + idLength)...])
        let box = try AES.GCM.SealedBox(
            nonce: try AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }), ciphertext: record.dropLast(16), tag: record.suffix(16))
        var plain = try AES.GCM.open(box, using: cek)
        // The last record ends in 2, after any padding of zeros.
        while plain.last == 0 { plain.removeLast() }
        guard plain.last == 2 else { throw Failure.badKey("no last-record delimiter") }
        return plain.dropLast()
    }

    // MARK: - VAPID (RFC 8292)

    /// `Authorization: vapid t=JWT, k=KEY` for a push to `endpoint`: a JWT signed with ES256
    /// by the service's key, for the endpoint's origin, valid until `expires` (at most 24 h).
    public static func authorization(endpoint: String, key: P256.Signing.PrivateKey, subject: String, expires: Date) throws -> String {
        guard let origin = HTTPURL(endpoint)?.origin else { throw Failure.badKey("\(endpoint) is not an http or https URL") }
        let header = Data(#"{"typ":"JWT","alg":"ES256"}"#.utf8).base64URL
        let claims = try JSONSerialization.data(
            withJSONObject: ["aud": origin, "exp": Int(expires.timeIntervalSince1970), "sub": subject],
            options: [.sortedKeys, .withoutEscapingSlashes]
        ).base64URL
        let signingInput = header + "." + claims
        let signature = try key.signature(for: Data(signingInput.utf8)).rawRepresentation.base64URL
        return "vapid t=\(signingInput).\(signature), k=\(key.publicKey.x963Representation.base64URL)"
    }
}

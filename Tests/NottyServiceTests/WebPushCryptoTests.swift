import Crypto
import Foundation
import NottyWebPush
import Testing

@Suite("Web Push's encryption (RFC 8291) and VAPID (RFC 8292)")
struct WebPushCryptoTests {
    /// RFC 8291, Appendix A: every input given, so the message is exactly the RFC's.
    @Test("RFC 8291's example: the same keys and salt give the RFC's message byte for byte, and it opens with the browser's key")
    func rfc8291Example() throws {
        let plaintext = Data("When I grow up, I want to be a watermelon".utf8)
        let senderKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: #require(Data(base64URL: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")))
        #expect(
            senderKey.publicKey.x963Representation.base64URL
                == "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        let browserKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: #require(Data(base64URL: "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")))
        let p256dh = try #require(Data(base64URL: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"))
        #expect(browserKey.publicKey.x963Representation == p256dh)
        let auth = try #require(Data(base64URL: "BTBZMqHH6r4Tts7J_aSIgg"))
        let salt = try #require(Data(base64URL: "DGv6ra1nlYgDCS1FRnbzlw"))
        let message = try WebPushCrypto.encrypt(plaintext, p256dh: p256dh, auth: auth, salt: salt, senderKey: senderKey)
        #expect(
            message.base64URL
                == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        )
        #expect(try WebPushCrypto.decrypt(message, browserKey: browserKey, auth: auth) == plaintext)
        // A fresh salt and key every time: never the same bytes twice; still opens.
        let fresh = try WebPushCrypto.encrypt(plaintext, p256dh: p256dh, auth: auth)
        let reopened = try WebPushCrypto.decrypt(fresh, browserKey: browserKey, auth: auth)
        #expect(fresh != message && reopened == plaintext)
        // The wrong auth secret does not open it.
        #expect(throws: (any Error).self) { try WebPushCrypto.decrypt(message, browserKey: browserKey, auth: Data(repeating: 1, count: 16)) }
    }

    @Test("the largest message a push service takes is the limit; one byte more is refused; bad keys are refused in words")
    func limitsAndKeys() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let auth = Data(repeating: 7, count: 16)
        let largest = try WebPushCrypto.encrypt(
            Data(repeating: 65, count: WebPushCrypto.maxPlaintext), p256dh: browser.publicKey.x963Representation, auth: auth)
        #expect(largest.count == 4096)
        #expect(throws: WebPushCrypto.Failure.tooLong(WebPushCrypto.maxPlaintext + 1)) {
            try WebPushCrypto.encrypt(
                Data(repeating: 65, count: WebPushCrypto.maxPlaintext + 1), p256dh: browser.publicKey.x963Representation, auth: auth)
        }
        #expect(WebPushCrypto.keyProblem(p256dh: browser.publicKey.x963Representation.base64URL, auth: auth.base64URL) == nil)
        #expect(WebPushCrypto.keyProblem(p256dh: "AAAA", auth: auth.base64URL)?.contains("keys.p256dh") == true)
        #expect(WebPushCrypto.keyProblem(p256dh: browser.publicKey.x963Representation.base64URL, auth: "short")?.contains("keys.auth") == true)
    }

    @Test("VAPID: a JWT for the endpoint's origin, expiring when asked, signed with ES256 by the key named in k=")
    func vapid() throws {
        let key = P256.Signing.PrivateKey()
        let expires = Date(timeIntervalSince1970: 1_800_000_000)
        let header = try WebPushCrypto.authorization(
            endpoint: "https://fcm.googleapis.com:443/fcm/send/abc?x=1", key: key, subject: "mailto:ops@example.com", expires: expires)
        let parts = header.split(separator: " ", maxSplits: 1)
        #expect(parts.first == "vapid")
        let fields = Dictionary(
            uniqueKeysWithValues: parts[1].components(separatedBy: ", ").map { field in
                (String(field.prefix { $0 != "=" }), String(field.drop { $0 != "=" }.dropFirst()))
            })
        let token = try #require(fields["t"])
        let jwt = token.split(separator: ".").map(String.init)
        #expect(jwt.count == 3 && fields["k"] == key.publicKey.x963Representation.base64URL)
        let claims = try JSONSerialization.jsonObject(with: #require(Data(base64URL: jwt[1]))) as? [String: Any]
        // The origin (RFC 6454): the scheme's own port is left out, as the push service compares it.
        #expect(claims?["aud"] as? String == "https://fcm.googleapis.com" && claims?["exp"] as? Int == 1_800_000_000)
        #expect(claims?["sub"] as? String == "mailto:ops@example.com")
        let header0 = try JSONSerialization.jsonObject(with: #require(Data(base64URL: jwt[0]))) as? [String: String]
        #expect(header0 == ["typ": "JWT", "alg": "ES256"])
        let k = try #require(fields["k"])
        let publicKey = try P256.Signing.PublicKey(x963Representation: #require(Data(base64URL: k)))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: #require(Data(base64URL: jwt[2])))
        #expect(publicKey.isValidSignature(signature, for: Data((jwt[0] + "." + jwt[1]).utf8)))
        #expect(!publicKey.isValidSignature(signature, for: Data((jwt[0] + "." + jwt[1] + "x").utf8)))
    }
}

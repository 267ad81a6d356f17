import Crypto
import Foundation
import HTTPTypes
import NottyCore
import NottyOutbound
import NottyTestSupport
import Synchronization
import Testing

@testable import NottyService
@testable import NottyWebPush

@Suite("Web Push: a browser is pushed what arrives and told what was handled (PROTOCOL.md §14)", .timeLimit(.minutes(5)))
struct WebPushServiceTests {
    /// A browser: its key pair and auth secret, and its subscription as toJSON() gives it.
    struct Browser {
        let key = P256.KeyAgreement.PrivateKey()
        let auth = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let endpoint: String

        var json: String {
            #"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(key.publicKey.x963Representation.base64URL)","auth":"\#(auth.base64URL)"}}"#
        }

        /// What the service pushed to this browser, opened as the browser does, in order.
        func messages(_ outbound: RecordingOutbound) throws -> [WebPushMessage] {
            try outbound.requests.filter { $0.url == endpoint }.map { request in
                let plain = try WebPushCrypto.decrypt(request.body ?? Data(), browserKey: key, auth: auth)
                return try NottyJSON.decoder.decode(WebPushMessage.self, from: plain)
            }
        }
    }

    @Test(
        "subscribe with the service's key; an arrival is a show and a dismiss a close naming the device, encrypted for the browser and signed with VAPID; quiet holds a show back; 410 ends a subscription, 503 is tried again without losing a message; bad subscriptions are 400s",
        arguments: Backend.available)
    func pushes(backend: Backend) async throws {
        let clock = ManualClock()
        let busy = Mutex(1)  // the busy browser's push service answers 503 this many times first
        let outbound = RecordingOutbound { request in
            if request.url.hasSuffix("/gone") { return .success(OutboundResponse(status: 410)) }
            if request.url.hasSuffix("/busy"),
                busy.withLock({ count in
                    defer { count -= 1 }; return count > 0
                })
            {
                return .success(OutboundResponse(status: 503))
            }
            return .success(OutboundResponse(status: 201))
        }
        let harness = try await ServiceHarness(backend, clock: clock, outbound: outbound)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let aliceId = try #require(try await harness.storage.user(name: "alice")).id
            let webPush = try #require(harness.service.webPush as? WebPushDelivery)

            // The key: 65 bytes of P-256 point, the same every time.
            let keyAnswer = try await client.call(.get, "/v1/webpush/key")
            #expect(keyAnswer.status == .ok, "\(keyAnswer.text)")
            let publicKey = try #require(keyAnswer.string("publicKey"))
            #expect(Data(base64URL: publicKey)?.count == 65 && Data(base64URL: publicKey)?.first == 4)
            #expect(try await client.call(.get, "/v1/webpush/key").string("publicKey") == publicKey)

            // Bad subscriptions: each a 400 in words, nothing kept.
            let phone = Browser(endpoint: "https://fcm.googleapis.com/fcm/send/phone-1")
            for (body, words) in [
                ("not json", "not valid JSON"), (#"{"keys":{}}"#, "endpoint is required"),
                (Browser(endpoint: "https://push.evil.example/x").json, "push.evil.example is not a browser's push service"),
                (Browser(endpoint: "http://fcm.googleapis.com/x").json, "https URL"),
                (phone.json.replacingOccurrences(of: phone.key.publicKey.x963Representation.base64URL, with: "AAAA"), "keys.p256dh"),
            ] {
                let refused = try await client.call(.post, "/v1/me/webpush", token: alice.userToken, json: body)
                #expect(refused.status == .badRequest && refused.text.contains(words), "\(body): \(refused.text)")
            }
            #expect(try await client.call(.post, "/v1/me/webpush", json: phone.json).status == .unauthorized)

            let gone = Browser(endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gone")
            let busyBrowser = Browser(endpoint: "https://web.push.apple.com/busy")
            var ids: [String] = []
            for browser in [phone, gone, busyBrowser] {
                let made = try await client.call(.post, "/v1/me/webpush", token: alice.userToken, json: browser.json)
                #expect(made.status == .created, "\(made.text)")
                ids.append(try #require(made.string("id")))
            }
            // The same endpoint again renews it: the same id.
            #expect(try await client.call(.post, "/v1/me/webpush", token: alice.userToken, json: phone.json).string("id") == ids[0])

            // An arrival: a show for each browser.
            let published = try await alice.publish(client, id: "disk-1", title: "Disk full", extra: #","priority":"High""#)
            let id = try #require(published.string("id"))
            await webPush.pushNow(userId: aliceId)
            let shown = try phone.messages(outbound)
            #expect(shown.count == 1 && shown.first?.type == "show" && shown.first?.notification?.id == id, "\(shown)")
            #expect(shown.first?.notification?.payload.visualContent?.title == "Disk full")
            let request = try #require(outbound.requests.first { $0.url == phone.endpoint })
            func header(_ name: String) -> String? { request.headers.first { $0.name == name }?.value }
            #expect(header("Content-Encoding") == "aes128gcm" && header("Urgency") == "high" && header("Topic") != nil)
            #expect(Int(header("TTL") ?? "") ?? 0 > 0)
            // VAPID: signed by the key the browser subscribed with, for the push service's origin.
            let vapid = try #require(header("Authorization"))
            #expect(vapid.hasPrefix("vapid t=") && vapid.hasSuffix(", k=" + publicKey), "\(vapid)")
            let jwt = vapid.dropFirst("vapid t=".count).prefix { $0 != "," }.split(separator: ".").map(String.init)
            let claims = try JSONSerialization.jsonObject(with: #require(Data(base64URL: jwt[1]))) as? [String: Any]
            #expect(claims?["aud"] as? String == "https://fcm.googleapis.com")
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: #require(Data(base64URL: jwt[2])))
            let signer = try P256.Signing.PublicKey(x963Representation: #require(Data(base64URL: publicKey)))
            #expect(signer.isValidSignature(signature, for: Data((jwt[0] + "." + jwt[1]).utf8)))

            // 410: that subscription is over. 503: tried again later, from the same message.
            #expect(outbound.requests.filter { $0.url == gone.endpoint }.count == 1)
            #expect(try await client.call(.delete, "/v1/me/webpush/\(ids[1])", token: alice.userToken).status == .notFound)
            #expect(try busyBrowser.messages(outbound).count == 1, "the busy service was asked once")
            await webPush.pushNow(userId: aliceId)
            #expect(try busyBrowser.messages(outbound).count == 1, "not before its retry time")
            clock.advance(by: 6)
            await webPush.pushNow(userId: aliceId)
            let retried = try busyBrowser.messages(outbound)
            #expect(retried.count == 2 && retried.last?.notification?.id == id, "\(retried)")

            // Handled: a close naming the state and who did it.
            let dismissed = try await client.call(
                .patch, "/v1/me/notifications/\(id)", token: alice.userToken, json: #"{"userActionState":"Dismissed"}"#)
            #expect(dismissed.status == .ok, "\(dismissed.text)")
            await webPush.pushNow(userId: aliceId)
            let closed = try phone.messages(outbound).last
            #expect(
                closed?.type == "close" && closed?.id == id && closed?.state == "dismissed" && closed?.by?.user == "alice",
                "\(String(describing: closed))")

            // Quiet holds a show back; pushed nothing at all, not even later.
            let quiet = try await client.call(
                .patch, "/v1/me/preferences", token: alice.userToken,
                json: #"{"preferences":[{"key":"quiet","value":{"until":"\#(ISOTime.format(clock.now() + 3600))"}}]}"#)
            #expect(quiet.status == .ok, "\(quiet.text)")
            await webPush.pushNow(userId: aliceId)
            let before = try phone.messages(outbound).count
            _ = try await alice.publish(client, id: "backup-1", title: "Backup done", extra: #","priority":"Low""#)
            await webPush.pushNow(userId: aliceId)
            #expect(try phone.messages(outbound).count == before, "quiet: no show")

            // Removed: nothing more.
            #expect(try await client.call(.delete, "/v1/me/webpush/\(ids[0])", token: alice.userToken).status == .noContent)
            #expect(try await client.call(.delete, "/v1/me/webpush/\(ids[0])", token: alice.userToken).status == .notFound)

            // A subscription ends with the device that made it (signed out, revoked).
            let device = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"deviceName":"laptop","platform":"websocket"}"#)
            let deviceSubscription = try #require(device.string("userNotificationSubscriptionId"), "\(device.text)")
            let laptop = Browser(endpoint: "https://fcm.googleapis.com/fcm/send/laptop")
            #expect(try await client.call(.post, "/v1/me/webpush", token: alice.userToken, json: laptop.json).status == .created)
            #expect(try await harness.storage.webPushSubscriptions(userId: aliceId).contains { $0.endpoint == laptop.endpoint })
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(deviceSubscription)", token: alice.userToken).status == .noContent)
            #expect(try await !harness.storage.webPushSubscriptions(userId: aliceId).contains { $0.endpoint == laptop.endpoint })
        }
    }
}

import Foundation
import NottyCore
import NottyTestSupport
import Testing

enum MicrosoftLibraries {
    static let available: Bool = (try? Repository.runWaiting(["python3", "-c", "import msal, azure.identity"]).status) == 0
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"
}

@Suite("Graph app servers with Microsoft's token libraries (PROTOCOL.md §2.1)", .serialized, .timeLimit(.minutes(5)))
struct MicrosoftLibrariesTests {
    @Test(
        "MSAL for Python and azure-identity discover a TLS notty serve, get a token and publish; a wrong secret is MSAL's invalid_client",
        .enabled(
            if: MicrosoftLibraries.available || MicrosoftLibraries.required,
            "SKIPPED LOUDLY: msal and azure-identity are not installed (python3 -m pip install msal azure-identity); .ci/run installs them"))
    func msalAndAzureIdentity() async throws {
        #expect(MicrosoftLibraries.available, "msal and azure-identity must be installed in CI")
        let directory = Repository.temporaryDirectory("notty-msal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cert = directory.appendingPathComponent("cert.pem").path, key = directory.appendingPathComponent("key.pem").path
        // requests checks the subject alternative name, not the common name (the certificate has both).
        try await TLSTests.certificate("127.0.0.1", cert: cert, key: key)
        let serve = try await ServeProcess(directory: directory, extraArguments: ["--tls-cert", cert, "--tls-key", key])
        defer { serve.stop() }
        #expect(serve.url.hasPrefix("https://"))

        // alice signs in and subscribes to the app, as a device would.
        func curl(_ arguments: [String]) async throws -> JSONValue? {
            let result = try await Repository.run(["curl", "-sS", "--max-time", "30", "--cacert", cert] + arguments)
            #expect(result.status == 0, "curl \(arguments): \(result.output)")
            return JSONValue(jsonText: result.output)
        }
        guard
            case .object(let login)? = try await curl([
                "-d", "grant_type=password&username=alice&password=s3cret-pw", serve.url + "/oauth2/v2.0/token",
            ]),
            case .string(let userToken)? = login["access_token"]
        else { Issue.record("alice could not sign in"); return }
        guard
            case .object(let subscription)? = try await curl([
                "-H", "Authorization: Bearer \(userToken)", "-H", "Content-Type: application/json",
                "-d", #"{"targetHostName":"ci.example.com","deviceName":"laptop","platform":"websocket"}"#, serve.url + "/v1/me/subscriptions",
            ]), case .string(let unsId)? = subscription["userNotificationSubscriptionId"]
        else { Issue.record("alice could not subscribe"); return }

        let client = try await Repository.run(
            ["python3", "Tests/msal/client.py", serve.url, serve.clientId, serve.clientSecret, unsId],
            environment: ["REQUESTS_CA_BUNDLE": cert, "PYTHONWARNINGS": "ignore"])
        report("Microsoft's libraries against notty serve:\n" + client.output)
        #expect(client.status == 0, "a library step failed:\n\(client.output)")
        #expect(client.output.contains(#""step": "msal", "token": true, "publish": 201"#), "\(client.output)")
        #expect(client.output.contains(#""step": "msal-wrong-secret", "error": "invalid_client""#), "\(client.output)")
        #expect(client.output.contains(#""step": "azure-identity", "token": true, "publish": 201"#), "\(client.output)")

        // Both publishes reached alice.
        guard case .object(let list)? = try await curl(["-H", "Authorization: Bearer \(userToken)", serve.url + "/v1/me/notifications?view=unread"]),
            case .array(let items)? = list["value"]
        else { Issue.record("alice's list did not answer"); return }
        let ids = items.compactMap { item -> String? in
            if case .object(let object) = item, case .string(let id)? = object["appNotificationId"] { return id }
            return nil
        }
        #expect(Set(ids) == ["msal-1", "azure-identity-1"], "alice's Unread: \(ids)")
    }
}

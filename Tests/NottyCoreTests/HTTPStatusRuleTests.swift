import NottyCore
import Testing

@Suite("Which HTTP statuses are worth retrying (one rule for the client, its outbox and the service's calls)")
struct HTTPStatusRuleTests {
    @Test("5xx, 429 and 408 are worth retrying; 2xx, 3xx and every other 4xx are final")
    func rule() {
        for status in [408, 429, 500, 502, 503, 504, 599] { #expect(HTTPStatusRule.isWorthRetrying(status), "\(status)") }
        for status in [200, 201, 204, 304, 400, 401, 403, 404, 409, 410, 413, 422] { #expect(!HTTPStatusRule.isWorthRetrying(status), "\(status)") }
    }
}

import Foundation
import NIOCore
import NottyCore

// Actions (PROTOCOL.md §12): run by the service, once, whichever device presses first.
extension ServiceClient {
    /// Presses action `n` (from 1) of notification `id`: the service runs it (or answers the
    /// run in flight, or the one that succeeded) and says how it went.
    public func pressAction(id: String, action n: Int) async throws -> ActionResult {
        let path = "/v1/me/notifications/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)/actions/\(n)"
        // The service gives the action's request 15 s: this waits for it, and then some.
        let answer = try await send(.POST, path, json: Data("{}".utf8), timeout: .seconds(45))
        return try Self.decoded(ActionResult.self, answer, status: answer.status == 202 ? 202 : 200)
    }
}

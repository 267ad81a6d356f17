import Foundation

/// Why talking to the service failed, in words a user can act on.
public enum SyncError: Error, Equatable, CustomStringConvertible {
    /// No credentials, or unusable ones.
    case notSignedIn(String)
    /// The refresh token is dead (expired, revoked, rotated elsewhere): only a new sign-in helps.
    case signInAgain(String)
    /// The service cannot be reached (connection refused, timeout, TLS, 5xx, 429).
    case unreachable(String)
    /// `410 cursorExpired`: the device must resync from scratch.
    case cursorExpired
    /// The service refused the request (a 4xx other than 401/410).
    case refused(status: Int, code: String, message: String)
    /// This device's store could not take what was synced (a full disk): the service and the
    /// network are fine, and the sync is tried again shortly.
    case local(String)

    public var description: String {
        switch self {
        case .notSignedIn(let message): message
        case .signInAgain(let message): message
        case .unreachable(let message): message
        case .cursorExpired: "the service no longer has this device's change history; a full resync is needed"
        case .refused(let status, let code, let message): "the service refused the request (\(status) \(code)): \(message)"
        case .local(let message): message
        }
    }

    /// Whether trying again later may succeed.
    public var isTransient: Bool {
        if case .unreachable = self { return true }
        return false
    }
}

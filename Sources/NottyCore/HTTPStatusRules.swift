/// What an HTTP status means to whoever sent the request: the one rule, for the device's
/// client (a request, a token refresh), its outbox (a mutation's result in a batch) and the
/// service's own outbound calls.
public enum HTTPStatusRule {
    /// Whether the same request may succeed if sent again later: the other side is failing
    /// (5xx), is limiting the sender (`429 Too Many Requests`) or gave up waiting for the
    /// request (`408 Request Timeout`). Every other status is final for that request.
    public static func isWorthRetrying(_ status: Int) -> Bool {
        status >= 500 || status == 429 || status == 408
    }
}

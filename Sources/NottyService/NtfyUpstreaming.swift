import Crypto
import Foundation

/// Waking iPhones through `--ntfy-upstream` (PROTOCOL.md §12), as the service sees it: told of
/// every change, it sends each new message's id to the upstream ntfy. Its engine is
/// `NottyDialects`' `NtfyUpstream`.
public protocol NtfyUpstreaming: Sendable {
    /// The storage committed changes for these users (their newest cursors).
    func changed(_ cursors: [String: Int64])
}

/// What the ntfy upstream asks of the storage.
public typealias UpstreamStorage = SubscriptionStorage

extension Inbox {
    /// ntfy's name for a topic at the upstream: the SHA-256 of its URL on this service, in hex.
    package static func upstreamTopic(publicURL: String, topic: String) -> String {
        SHA256.hash(data: Data((publicURL + "/" + topic).utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

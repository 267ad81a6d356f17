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

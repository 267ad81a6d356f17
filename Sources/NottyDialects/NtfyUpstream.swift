import Foundation
import Logging
import NottyCore
import NottyRecords
import NottyService
import Synchronization

/// Waking iPhones (PROTOCOL.md §12): the ntfy iOS app is woken only through an upstream ntfy server
/// (ntfy.sh) that holds Apple's push credentials. For every `message` a topic gets, the
/// service sends the upstream ntfy's poll request, `POST <upstream>/<sha256(public URL + "/" +
/// topic)>` with `X-Poll-ID` and no body; the phone then asks this service for that message
/// (`GET /TOPIC/json?poll=1&id=ID`). The topic itself never reaches the upstream.
///
/// Each instance sends for the changes it is told of; with several instances the upstream may
/// get a poll request twice, which the phone answers by fetching one message it already has.
public final class NtfyUpstream: NtfyUpstreaming, ServicePart {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    let storage: any UpstreamStorage
    let inbox: Inbox
    let outbound: any OutboundHTTP
    let upstream: String
    /// Each user's feed position read up to (from the newest when first rung).
    private let cursors = Mutex<[String: Int64]>([:])
    /// Users rung while their feed was being read: read again after.
    private let waiting = Mutex<Set<String>>([])
    private let reading = Mutex<Set<String>>([])
    /// Each user's topics, briefly cached (a publish rings once per change).
    private let topics = TTLCache<String, [String]>(ttl: .seconds(10))
    /// When this instance started: older changes are not sent on.
    let startedAt: Date
    /// Poll requests in flight or waiting to be retried, at most.
    static let maxInFlight = 256
    private let inFlight = Atomic<Int>(0)

    package init?(core: ServiceCore, storage: any UpstreamStorage, inbox: Inbox, outbound: (any OutboundHTTP)?) {
        guard let upstream = core.config.ntfyUpstream, core.config.publicURL != nil, let outbound else { return nil }
        self.core = core
        self.storage = storage
        self.inbox = inbox
        self.outbound = outbound
        self.upstream = upstream.hasSuffix("/") ? String(upstream.dropLast()) : upstream
        startedAt = core.clock.nowMillis().addingTimeInterval(-1)
    }

    /// The storage's change handler calls this: each user's new messages are sent on, in a
    /// task of their own (a publish never waits for the upstream).
    public func changed(_ cursors: [String: Int64]) {
        for userId in cursors.keys {
            let start = reading.withLock { $0.insert(userId).inserted }
            if !start {
                waiting.withLock { _ = $0.insert(userId) }
                continue
            }
            core.errands.run { await self.read(userId: userId) }
        }
    }

    private func read(userId: String) async {
        repeat {
            do {
                try await sendNew(userId: userId)
            } catch {
                logger.warning(
                    "ntfy upstream: cannot read the feed; the next change tries again", metadata: ["user": "\(userId)", "error": "\(error)"])
            }
        } while waiting.withLock { $0.remove(userId) != nil }
        reading.withLock { _ = $0.remove(userId) }
        // A ring between the last read and leaving: read once more.
        if waiting.withLock({ $0.remove(userId) != nil }) { changed([userId: 0]) }
    }

    /// The messages (notifications now in Unread) since the user's position, a poll request
    /// each per topic. A user first rung since this instance started is read from the start of
    /// the feed, and only what changed since the start is sent.
    private func sendNew(userId: String) async throws {
        let upstreamIds =
            try await topics.value(userId) {
                try await db { try await storage.subscriptions(userId: userId) }
                    .filter { $0.platform == "ntfy" && $0.targetHostName == nil && !$0.revoked }.compactMap(\.upstreamId)
            } ?? []
        guard !upstreamIds.isEmpty else { return }
        var position = cursors.withLock { $0[userId] } ?? 0
        let startedAt = self.startedAt
        while true {
            let page = try await inbox.changes(userId: userId, since: position, limit: 500)
            let now = clock.nowMillis()
            for notification in page.changes
            where notification.lastModifiedDateTime >= startedAt && notification.isLive(at: now)
                && NotificationView.unread.contains(notification, now: now)
            {
                let id = NtfyFollower.messageId(notification)
                for upstreamId in upstreamIds { poll(upstreamId: upstreamId, messageId: id) }
            }
            position = Int64(page.cursor) ?? position
            let reached = position
            cursors.withLock { $0[userId] = max($0[userId] ?? 0, reached) }
            if !page.hasMore { return }
        }
    }

    /// Sends one poll request, retried after 5 s, 30 s and 2 min when the upstream fails.
    func poll(upstreamId: String, messageId: String) {
        guard inFlight.add(1, ordering: .relaxed).newValue <= Self.maxInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            logger.warning("ntfy upstream: too many poll requests waiting; this one is dropped", metadata: ["message": "\(messageId)"])
            return
        }
        var headers = [OutboundHeader("X-Poll-ID", messageId)]
        if let token = config.ntfyUpstreamToken { headers.append(OutboundHeader("Authorization", "Bearer \(token)")) }
        let request = OutboundRequest(
            method: "POST", url: upstream + "/" + upstreamId, headers: headers,
            body: Data(), timeout: .seconds(15), aim: .administrator)
        core.errands.run { [self] in
            defer { inFlight.subtract(1, ordering: .relaxed) }
            for (attempt, wait) in [0, 5, 30, 120].enumerated() {
                if wait > 0 { try? await Task.sleep(for: .seconds(wait)) }
                do {
                    let response = try await outbound.send(request)
                    if response.succeeded { return }
                    logger.warning("ntfy upstream refused a poll request", metadata: ["status": "\(response.status)", "attempt": "\(attempt + 1)"])
                    if !response.isWorthRetrying { return }
                } catch {
                    logger.warning("ntfy upstream unreachable", metadata: ["error": "\(error)", "attempt": "\(attempt + 1)"])
                }
            }
        }
    }
}

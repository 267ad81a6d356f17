import Foundation
import Logging
import NottyCore
import NottyService
import PostgresNIO
import Synchronization

/// LISTEN/NOTIFY between instances: what each announces and how each listens.
extension PostgresStorage {
    // MARK: - Announcements between instances

    /// `instance|user:seq;user:seq…`, split to stay well under NOTIFY's 8000-byte payload limit
    /// (``FeedStatements/PublishTogether`` makes the same payloads in SQL).
    static func announcements(_ cursors: [String: Int64], from instance: String) -> [String] {
        var payloads: [String] = []
        var current = ""
        for (user, seq) in cursors.sorted(by: { $0.key < $1.key }) {
            let item = "\(user):\(seq)"
            if !current.isEmpty && current.utf8.count + item.utf8.count > announcementBytes {
                payloads.append("\(instance)|\(current)")
                current = ""
            }
            current += current.isEmpty ? item : ";\(item)"
        }
        if !current.isEmpty { payloads.append("\(instance)|\(current)") }
        return payloads
    }

    /// About how many bytes of cursors one announcement carries.
    static let announcementBytes = 7000

    /// What a transaction that revokes or deletes credentials announces: `INSTANCE|credentials`.
    static func credentialsAnnouncement(from instance: String) -> String { "\(instance)|credentials" }

    /// True for another instance's (or `notty admin`'s) credentials announcement.
    static func isCredentialsAnnouncement(_ payload: String, ignoring instance: String) -> Bool {
        payload.hasSuffix("|credentials") && payload != credentialsAnnouncement(from: instance)
    }

    /// Inside a transaction that revokes or deletes credentials: tells the other instances to
    /// forget what they cache (delivered only if it commits).
    func announceCredentialsChange(_ connection: PostgresConnection) async throws {
        try await connection.exec("SELECT pg_notify(\(Self.channel), \(Self.credentialsAnnouncement(from: instanceId)))", logger: logger)
    }

    /// The cursors in another instance's announcement; `nil` for this instance's own or a malformed one.
    static func cursors(inAnnouncement payload: String, ignoring instance: String) -> [String: Int64]? {
        guard let bar = payload.firstIndex(of: "|"), payload[..<bar] != instance else { return nil }
        var cursors: [String: Int64] = [:]
        for item in payload[payload.index(after: bar)...].split(separator: ";") {
            guard let colon = item.lastIndex(of: ":"), let seq = Int64(item[item.index(after: colon)...]) else { return nil }
            cursors[String(item[..<colon])] = seq
        }
        return cursors.isEmpty ? nil : cursors
    }

    func startListening() {
        let task = Task { [weak self] in
            var listenedBefore = false
            var pause = Duration.milliseconds(200)
            while !Task.isCancelled, let storage = self {
                do {
                    try await storage.client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notices in
                            if listenedBefore {
                                // Announcements made while this instance was not listening are lost:
                                // have the service re-check every connected user and forget the
                                // credentials it caches (a revocation may be among them).
                                storage.logger.notice("listening to other instances again")
                                storage.onCredentialsChange.handler?()
                                storage.onResync.handler?()
                            }
                            listenedBefore = true
                            pause = .milliseconds(200)
                            for try await notice in notices {
                                if Self.isCredentialsAnnouncement(notice.payload, ignoring: storage.instanceId) {
                                    storage.onCredentialsChange.handler?()
                                } else if let cursors = Self.cursors(inAnnouncement: notice.payload, ignoring: storage.instanceId) {
                                    storage.onChange.handler?(cursors)
                                }
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    storage.logger.warning("not listening to other instances' changes; retrying", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
        tasks.withLock { $0.insert(task, at: 0) }
    }
}

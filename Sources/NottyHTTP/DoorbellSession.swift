import Foundation
import HummingbirdWebSocket
import NottyCore
import NottyService

/// One connected device on `/v1/me/push`: sends a frame on every change of its user's feed
/// until the device goes away or the service shuts down.
struct DoorbellSession {
    let service: NotificationService
    let userId: String
    let fullPayload: Bool

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let (connection, rings) = service.hub.connect(userId: userId)
        defer { service.hub.disconnect(userId: userId, id: connection) }
        let start = fullPayload ? try await service.inbox.latestCursor(userId: userId) : 0
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Reading keeps control frames (ping/pong/close) flowing; data from the device is ignored.
                for try await _ in inbound {}
            }
            group.addTask {
                var sent = start
                for await cursor in rings {
                    if fullPayload {
                        sent = try await sendFullFrames(from: sent, outbound: outbound)
                    } else {
                        try await send(DoorbellFrame.changed(cursor: String(cursor)), outbound)
                    }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Sends the changes after `cursor` as `changes` frames; returns the new cursor.
    private func sendFullFrames(from cursor: Int64, outbound: WebSocketOutboundWriter) async throws -> Int64 {
        var current = cursor
        while true {
            let page = try await service.inbox.changes(userId: userId, since: current, limit: 500)
            guard let next = Int64(page.cursor), next != current else { return current }
            try await send(DoorbellFrame(type: "changes", cursor: page.cursor, previousCursor: String(current), changes: page.changes, preferences: page.preferences), outbound)
            current = next
            if !page.hasMore { return current }
        }
    }

    private func send(_ frame: DoorbellFrame, _ outbound: WebSocketOutboundWriter) async throws {
        let data = try NottyJSON.encoder.encode(frame)
        try await outbound.write(.text(String(decoding: data, as: UTF8.self)))
        service.metrics.doorbellFrames.increment()
    }
}

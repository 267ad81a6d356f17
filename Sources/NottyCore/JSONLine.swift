import Foundation

/// One notification as a JSON line (PROTOCOL.md §1 names).
public func jsonLine(_ notification: UserNotification) -> String {
    String(decoding: notification.jsonBytes(), as: UTF8.self)
}

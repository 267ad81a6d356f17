import Foundation

/// How a device hears about changes: what the sync engine reports (`LiveSync`), and what the
/// center's status line and `notty poll` say of it.
public enum ConnectionState: Sendable, Equatable {
    /// Signing in or opening the doorbell.
    case connecting
    /// The doorbell WebSocket is open: changes arrive as they happen.
    case live
    /// Conditional polls every so many seconds.
    case polling(every: Int)
    /// The service cannot be reached since then; changes queue in the outbox.
    case offline(since: Date)

    /// The words for a person: `live`, `polling every 30s`, `offline since 09:41`,
    /// `connecting…`; `short` ones for a narrow status line (`polling 30s`, `offline 09:41`).
    /// `time` writes the time the service was last reached.
    public func words(short: Bool = false, time: (Date) -> String) -> String {
        switch self {
        case .connecting: "connecting…"
        case .live: "live"
        case .polling(let seconds): short ? "polling \(seconds)s" : "polling every \(seconds)s"
        case .offline(let since): short ? "offline \(time(since))" : "offline since \(time(since))"
        }
    }
}

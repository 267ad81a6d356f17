import Foundation

/// Times as the center and the commands write them, independent of the locale: the one
/// formatter of ages and relative times.
public enum TimeText {
    /// A compact age of at most 3 cells: `now`, `5m`, `3h`, `2d`, `4w`, `1y`.
    public static func age(of date: Date, now: Date) -> String {
        let seconds = Int(now.timeIntervalSince(date).rounded(.down))
        return compact(max(0, seconds)) ?? "now"
    }

    /// `25m ago`, `in 6d`, `just now`; without `ago` (a narrow status line), a past time is
    /// `25m`.
    public static func relative(_ date: Date, now: Date, ago: Bool = true) -> String {
        let seconds = Int(date.timeIntervalSince(now).rounded(.towardZero))
        guard let amount = compact(abs(seconds)) else { return "just now" }
        return seconds < 0 ? (ago ? "\(amount) ago" : amount) : "in \(amount)"
    }

    /// `14:05` on the same day as `now`, else `2026-03-15 09:00`, in `timeZone`.
    public static func clock(_ date: Date, in timeZone: TimeZone, now: Date) -> String {
        let calendar = calendar(timeZone)
        if calendar.isDate(date, inSameDayAs: now) {
            let parts = calendar.dateComponents([.hour, .minute], from: date)
            return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
        }
        return dateTime(date, in: timeZone)
    }

    /// `2026-03-15 09:00` in `timeZone`.
    public static func dateTime(_ date: Date, in timeZone: TimeZone) -> String {
        let parts = calendar(timeZone).dateComponents([.year, .month, .day, .hour, .minute], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0, parts.hour ?? 0, parts.minute ?? 0)
    }

    /// The largest whole unit of a duration (`5m`); `nil` under a minute.
    private static func compact(_ seconds: Int) -> String? {
        switch seconds {
        case ..<60: nil
        case ..<3600: "\(seconds / 60)m"
        case ..<86_400: "\(seconds / 3600)h"
        case ..<(7 * 86_400): "\(seconds / 86_400)d"
        case ..<(365 * 86_400): "\(seconds / (7 * 86_400))w"
        default: "\(seconds / (365 * 86_400))y"
        }
    }

    private static func calendar(_ timeZone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }
}

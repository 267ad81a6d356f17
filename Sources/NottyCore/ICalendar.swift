import Foundation

/// An iCalendar feed (RFC 5545) of one person's on-call shifts (PROTOCOL.md §13.2), for any
/// calendar app: one `VEVENT` per shift, times in UTC, lines ended by CRLF and folded at 75
/// octets. A shift's `UID` is made of the team, the person and the shift's start, so a calendar
/// that fetches the feed again sees the same event, and a shift that an override moves is a new one.
public enum ICalendar {
    /// The media type of a feed.
    public static let mediaType = "text/calendar; charset=utf-8"

    public static func onCallFeed(team: String, teamId: String, user: String, shifts: [OnCallShift], now: Date) -> String {
        var lines = [
            "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//notty//on call//EN", "CALSCALE:GREGORIAN", "METHOD:PUBLISH",
            "X-WR-CALNAME:" + escaped("On call for \(team) (\(user))"),
            // How often a calendar app should fetch it again (RFC 7986 and the common extension).
            "REFRESH-INTERVAL;VALUE=DURATION:PT1H", "X-PUBLISHED-TTL:PT1H",
        ]
        for shift in shifts where shift.user == user {
            lines += [
                "BEGIN:VEVENT",
                "UID:" + uid(teamId: teamId, user: user, from: shift.from),
                "DTSTAMP:" + stamp(now),
                "DTSTART:" + stamp(shift.from),
                "DTEND:" + stamp(shift.until),
                "SUMMARY:" + escaped("On call for \(team)" + (shift.override ? " (override)" : "")),
                "DESCRIPTION:" + escaped("notty pages \(user) for \(team)'s escalations during this shift."),
                "TRANSP:TRANSPARENT",
                "END:VEVENT",
            ]
        }
        lines.append("END:VCALENDAR")
        return lines.map(folded).joined(separator: "\r\n") + "\r\n"
    }

    /// A stable id of one shift.
    static func uid(teamId: String, user: String, from: Date) -> String {
        // FNV-1a, twice with different offsets: stable across builds and machines (not a secret).
        func fnv(_ offset: UInt64) -> UInt64 {
            var hash = offset
            for byte in "\(teamId)\n\(user)\n\(ISOTime.millis(from))".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return hash
        }
        return String(format: "%016llx%016llx", fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4)) + "@oncall.notty"
    }

    /// `20261207T080000Z`.
    static func stamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }

    /// A TEXT value: backslash, semicolon, comma and newlines escaped.
    static func escaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case ";": out += "\\;"
            case ",": out += "\\,"
            case "\n", "\r\n", "\r": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// A content line folded so that no line is longer than 75 octets (never inside a character).
    static func folded(_ line: String) -> String {
        var out = "", count = 0
        for scalar in line.unicodeScalars {
            let size = String(scalar).utf8.count
            if count + size > 75 {
                out += "\r\n "
                count = 1
            }
            out.unicodeScalars.append(scalar)
            count += size
        }
        return out
    }
}

import Foundation
import NottyCore
import Testing

@Suite("How notty count and notty watch print the count")
struct BadgeFormatTests {
    func badge(_ count: Int, high: Int = 0) -> Badge {
        var counts = ViewCounts()
        counts.unread = count
        counts.read = 4
        counts.all = count + 4
        return Badge(view: .unread, count: count, highUnread: high, counts: counts)
    }

    @Test("each format at 0, at 3 and at 3 with a High one unread; NO_COLOR leaves out tmux's and polybar's colours")
    func lines() {
        let cases: [(BadgeFormat, String, String, String)] = [
            (.plain, "0", "3", "3"),
            (.tmux, "", "✉ 3", "#[fg=red,bold]✉ 3!#[default]"),
            (.starship, "", "3", "3!"),
            (.i3blocks, "", "✉ 3", "✉ 3!"),
            (.polybar, "", "✉ 3", "%{F#e06c75}✉ 3!%{F-}"),
        ]
        for (format, zero, some, high) in cases {
            #expect(format.line(badge(0)) == zero, "\(format)")
            #expect(format.line(badge(3)) == some, "\(format)")
            #expect(format.line(badge(3, high: 1)) == high, "\(format)")
        }
        #expect(BadgeFormat.tmux.line(badge(3, high: 1), color: false) == "✉ 3!")
        #expect(BadgeFormat.polybar.line(badge(3, high: 1), color: false) == "✉ 3!")
    }

    @Test("json and waybar lines are JSON objects with their fields: waybar's text, tooltip, class and alt")
    func jsonLines() throws {
        func object(_ line: String) -> [String: JSONValue] {
            if case .object(let object)? = JSONValue(jsonText: line) { return object }
            return [:]
        }
        let json = object(BadgeFormat.json.line(badge(3, high: 1)))
        #expect(json["view"] == .string("unread") && json["count"] == .number(3) && json["highUnread"] == .number(1))
        guard case .object(let counts)? = json["counts"] else { Issue.record("no counts"); return }
        #expect(counts["read"] == .number(4) && counts["all"] == .number(7) && counts.count == 6)
        for (count, high, text, level, tooltip) in [
            (0, 0, "", "none", "notty: 0 unread"), (3, 0, "3", "some", "notty: 3 unread"), (3, 2, "3", "high", "notty: 3 unread, 2 High"),
        ] {
            let waybar = object(BadgeFormat.waybar.line(badge(count, high: high)))
            #expect(waybar["text"] == .string(text) && waybar["class"] == .string(level) && waybar["alt"] == .string(level))
            #expect(waybar["tooltip"] == .string(tooltip))
            #expect(!BadgeFormat.waybar.line(badge(count, high: high)).contains("\n"), "one line each")
        }
    }
}

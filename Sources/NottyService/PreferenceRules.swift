import Foundation
import NottyCore

/// PROTOCOL.md §9: each preference is last writer wins by the device's hybrid clock (§1), as a
/// notification's state fields are; both backends apply it through this one rule.
package enum PreferenceRules {
    /// Whether a write of `value` at `changedAt` (milliseconds) replaces what is stored: a
    /// later clock wins, a tie goes to the later arrival (this one), and the same value at the
    /// same clock again changes nothing (no new feed position, no ring).
    package static func applies(value: String, changedAt: Int64, over stored: (value: String, changedAt: Int64)?) -> Bool {
        guard let stored else { return true }
        if changedAt == stored.changedAt && value == stored.value { return false }
        return changedAt >= stored.changedAt
    }

    /// A stored row as an entry (its value is JSON text; text that is not JSON reads as null).
    package static func entry(key: String, value: String, changedAt: Int64) -> PreferenceEntry {
        PreferenceEntry(key: key, value: JSONParser.parse(Data(value.utf8)) ?? .null, changedAt: ISOTime.date(millis: changedAt))
    }

    /// The most keys one user may have.
    package static let maxKeys = 1000
    /// The most entries one `PATCH` may carry.
    package static let maxPerWrite = 100
    /// The longest value, as JSON text.
    package static let maxValueBytes = 4096
}

import Foundation

/// What the user's preferences say about interrupting them (PROTOCOL.md §9): quiet hours and mutes.
/// Interrupting is a popup or an `--exec` command; history and counts never change.
///
/// The preferences behind it: `quiet` = `{"until": <ISO time>, "strict": <bool>}` (`null`: not
/// quiet; `{"skip": <ISO time>}`: not quiet, and a window of the schedule that ends by then is
/// skipped: what `quiet off` writes inside a window), `quiet.schedule` = ``QuietSchedule`` (`null`: none), `mute.app.<host>` and
/// `mute.group.<name>` = `{"until": <ISO time or null: until unmuted>}` (`null`: not muted), or
/// with `"from": <ISO time>` a maintenance window (PROTOCOL.md §16.4): muted from then until then.
/// A quiet period or a mute whose time has passed is over.
public struct Interruptions: Sendable, Equatable {
    public enum Target: Sendable, Equatable, Hashable {
        case app(String)
        case group(String)
    }

    public struct Mute: Sendable, Equatable {
        public var target: Target
        /// When it ends by itself; nil: when it is lifted.
        public var until: Date?
        /// When a maintenance window starts (nil: it holds now).
        public var from: Date? = nil
        /// A team's mute (its owners' window, PROTOCOL.md §16.4): it holds that team's
        /// notifications only. Nil: the user's own, for everything they get.
        public var team: String? = nil
    }

    /// When the quiet period ends; nil: not quiet.
    public var quietUntil: Date?
    /// Quiet for `High` too.
    public var strict = false
    /// The mutes that hold now.
    public var mutes: [Mute] = []
    /// Maintenance windows still to come, soonest first.
    public var scheduled: [Mute] = []
    /// The end of a scheduled window that `quiet off` ended early, while it is still to come:
    /// a new quiet period keeps it, so that the window does not come back when the period ends.
    public var skip: Date?

    public static let quietKey = "quiet"
    public static let scheduleKey = "quiet.schedule"
    /// The quiet schedule, when there is one (whether or not it is quiet now).
    public var schedule: QuietSchedule?
    public static func key(_ target: Target) -> String {
        switch target {
        case .app(let host): "mute.app." + host.lowercased()
        case .group(let name): "mute.group." + name
        }
    }

    /// A quiet period until `until`; `skip`: a scheduled window ended early (``skip``), kept.
    public static func quietValue(until: Date, strict: Bool, skip: Date? = nil) -> JSONValue {
        var value: [String: JSONValue] = ["until": .string(ISOTime.format(until)), "strict": .bool(strict)]
        if let skip { value["skip"] = .string(ISOTime.format(skip)) }
        return .object(value)
    }

    /// A mute until `until` (nil: until lifted); with `from`, a maintenance window.
    public static func muteValue(until: Date?, from: Date? = nil) -> JSONValue {
        var value: [String: JSONValue] = ["until": until.map { .string(ISOTime.format($0)) } ?? .null]
        if let from { value["from"] = .string(ISOTime.format(from)) }
        return .object(value)
    }

    /// What `preferences` say at `now` (what has ended is left out).
    public init(preferences: [PreferenceEntry], now: Date) {
        for entry in preferences {
            guard case .object(let value) = entry.value else { continue }
            let until: Date? = if case .string(let text)? = value["until"] { ISOTime.parse(text) } else { nil }
            if entry.key == Self.quietKey {
                if case .string(let text)? = value["skip"], let end = ISOTime.parse(text), end > now { skip = end }
                guard let until, until > now else { continue }
                if until > quietUntil ?? .distantPast { quietUntil = until }
                strict = strict || value["strict"] == .bool(true)
            } else if entry.key == Self.scheduleKey {
                schedule = QuietSchedule(entry.value)
            } else if let (target, team) = Self.muted(by: entry.key) {
                if let until, until <= now { continue }
                let from: Date? = if case .string(let text)? = value["from"] { ISOTime.parse(text) } else { nil }
                if let from, from > now {
                    scheduled.append(Mute(target: target, until: until, from: from, team: team))
                } else {
                    mutes.append(Mute(target: target, until: until, team: team))
                }
            }
        }
        mutes.sort { ($0.team ?? "", Self.key($0.target)) < ($1.team ?? "", Self.key($1.target)) }
        scheduled.sort { ($0.from ?? now, $0.team ?? "", Self.key($0.target)) < ($1.from ?? now, $1.team ?? "", Self.key($1.target)) }
        if let schedule, let end = schedule.end(containing: now), end > skip ?? .distantPast {
            if end > quietUntil ?? .distantPast { quietUntil = end }
            strict = strict || schedule.strict
        }
    }

    /// The `quiet` value that ends quiet at `now`: `null`, or inside a window of the schedule,
    /// `{"skip": <the window's end>}`, so that the window is over now and the next one is quiet
    /// again.
    public func offValue(now: Date) -> JSONValue {
        guard let end = schedule?.end(containing: now) else { return .null }
        return .object(["skip": .string(ISOTime.format(end))])
    }

    static func target(of key: String) -> Target? {
        if key.hasPrefix("mute.app."), key.count > 9 { return .app(String(key.dropFirst(9))) }
        if key.hasPrefix("mute.group."), key.count > 11 { return .group(String(key.dropFirst(11))) }
        return nil
    }

    /// A team's mutes reach its members as `team.<TEAM>.mute.app.<host>` and
    /// `team.<TEAM>.mute.group.<name>` (PROTOCOL.md §16.4).
    public static let teamPrefix = "team."

    /// A team's mute key as its members see it.
    public static func key(_ target: Target, team: String) -> String { teamPrefix + team + "." + key(target) }

    /// What a mute key mutes, and for which team's notifications (nil: all).
    static func muted(by key: String) -> (Target, team: String?)? {
        guard key.hasPrefix(teamPrefix) else { return target(of: key).map { ($0, nil) } }
        let rest = key.dropFirst(teamPrefix.count)
        guard let mark = rest.range(of: ".mute."), mark.lowerBound > rest.startIndex,
            let target = target(of: String(rest[rest.index(after: mark.lowerBound)...]))
        else { return nil }
        return (target, String(rest[..<mark.lowerBound]))
    }

    /// Whether `key` is one a team may have: a mute of an app or a group (not a team's, nor quiet).
    public static func muted(team key: String) -> Bool { target(of: key) != nil }

    /// Whether `value` is a mute's: `{"until": ISO time or null}`, with an optional `"from"`.
    public static func isMuteValue(_ value: JSONValue) -> Bool {
        guard case .object(let object) = value, Set(object.keys).isSubset(of: ["until", "from"]) else { return false }
        switch object["until"] {
        case .null?, nil: break
        case .string(let text)?: if ISOTime.parse(text) == nil { return false }
        default: return false
        }
        switch object["from"] {
        case nil: return true
        case .string(let text)?: return ISOTime.parse(text) != nil
        default: return false
        }
    }

    public var isQuiet: Bool { quietUntil != nil }

    /// Whether `notification` is muted (by its app or its group; a team's mute only its own).
    public func isMuted(_ notification: UserNotification) -> Bool {
        mutes.contains { mute in
            if let team = mute.team, notification.team != team { return false }
            return switch mute.target {
            case .app(let host): notification.targetHostName.equalsIgnoringASCIICase(host)
            case .group(let name): notification.groupName == name
            }
        }
    }

    /// Whether `notification` may interrupt: never when muted; while quiet only `High`, and
    /// not even that when quiet is strict.
    public func interrupts(_ notification: UserNotification) -> Bool {
        if isMuted(notification) { return false }
        if isQuiet { return notification.priority == .high && !strict }
        return true
    }
}

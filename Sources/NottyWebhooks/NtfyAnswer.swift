import Foundation
import NottyCore

// The ntfy dialect's wire types are in this module: what ntfy clients publish
// (`NtfyMessage`, Ntfy.swift) and what they are answered and streamed (`NtfyAnswer`).

/// ntfy's message JSON (its `docs/subscribe/api.md`), for answers and subscribers.
public struct NtfyAnswer: Codable, Sendable, Equatable {
    public var id: String
    public var time: Int64
    public var expires: Int64?
    public var event: String
    public var topic: String
    public var title: String?
    public var message: String?
    public var priority: Int?
    public var tags: [String]?
    public var click: String?
    public var sequenceId: String?
    /// The buttons a phone shows (ntfy's action objects, at most 3).
    public var actions: [NtfyAction]?

    enum CodingKeys: String, CodingKey {
        case id, time, expires, event, topic, title, message, priority, tags, click, actions
        case sequenceId = "sequence_id"
    }

    public init(
        id: String, time: Date, expires: Date?, event: String, topic: String, title: String? = nil, message: String? = nil,
        priority: Int? = nil, tags: [String] = [], click: String? = nil, sequenceId: String? = nil, actions: [NtfyAction] = []
    ) {
        self.id = id
        self.time = Int64(time.timeIntervalSince1970)
        self.expires = expires.map { Int64($0.timeIntervalSince1970) }
        self.event = event
        self.topic = topic
        self.title = title
        self.message = message
        self.priority = priority == 3 ? nil : priority  // ntfy leaves out the default
        self.tags = tags.isEmpty ? nil : tags
        self.click = click
        self.sequenceId = sequenceId
        self.actions = actions.isEmpty ? nil : actions
    }

    /// A new message id: 12 letters and digits, as ntfy's (71 random bits, from two draws of
    /// the system's generator rather than twelve).
    public static func newMessageId() -> String {
        var generator = SystemRandomNumberGenerator()
        var (high, low): (UInt64, UInt64) = (generator.next(), generator.next())
        return String(unsafeUninitializedCapacity: 12) { out in
            for i in 0..<12 {
                let source = i < 6 ? high : low
                out[i] = alphabet[Int(source % 62)]
                if i < 6 { high = source / 62 } else { low = source / 62 }
            }
            return 12
        }
    }

    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
}

/// Written by hand: an ntfy answer is made for every ntfy publish and stream event.
extension NtfyAnswer: JSONWritable {
    public func write(to w: inout JSONWriter) {
        w.raw(#"{"id":"#); w.string(id)
        w.raw(#","time":"#); w.int(Int(time))
        if let expires { w.raw(#","expires":"#); w.int(Int(expires)) }
        w.raw(#","event":"#); w.string(event)
        w.raw(#","topic":"#); w.string(topic)
        if let title { w.raw(#","title":"#); w.string(title) }
        if let message { w.raw(#","message":"#); w.string(message) }
        if let priority { w.raw(#","priority":"#); w.int(priority) }
        if let tags {
            w.raw(#","tags":["#)
            for (index, tag) in tags.enumerated() {
                if index > 0 { w.raw(",") }
                w.string(tag)
            }
            w.raw("]")
        }
        if let click { w.raw(#","click":"#); w.string(click) }
        if let actions { w.raw(#","actions":"#); w.array(actions) }
        if let sequenceId { w.raw(#","sequence_id":"#); w.string(sequenceId) }
        w.raw("}")
    }
}

/// One of a message's buttons, as ntfy writes it: `view` opens `url` on the phone; `http`
/// makes the request itself (here always back to notty, which runs the action: PROTOCOL.md §12).
public struct NtfyAction: Codable, Sendable, Equatable, JSONWritable {
    public var id: String
    public var action: String
    public var label: String
    public var url: String
    public var method: String?
    public var clear: Bool

    public init(id: String, action: String, label: String, url: String, method: String? = nil, clear: Bool) {
        self.id = id
        self.action = action
        self.label = label
        self.url = url
        self.method = method
        self.clear = clear
    }

    public func write(to w: inout JSONWriter) {
        w.raw(#"{"id":"#); w.string(id)
        w.raw(#","action":"#); w.string(action)
        w.raw(#","label":"#); w.string(label)
        w.raw(#","url":"#); w.string(url)
        if let method { w.raw(#","method":"#); w.string(method) }
        w.raw(clear ? #","clear":true}"# : #","clear":false}"#)
    }
}

import Foundation

/// Any JSON value, kept as given. Used for fields notty stores and echoes without
/// interpreting them (`targetPolicy`, `fallbackPolicy`).
public enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value as compact JSON text.
    public var jsonText: String {
        var writer = JSONWriter()
        writer.value(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Parses JSON text back into a value; `nil` when the text is not JSON.
    public init?(jsonText: String) {
        guard let value = JSONParser.parse(Data(jsonText.utf8)) else { return nil }
        self = value
    }
}

extension JSONValue {
    /// `value` as notty encodes it (``NottyJSON``), as a JSON value (`null` if it cannot be).
    public static func encoding(_ value: some Encodable) -> JSONValue {
        guard let data = try? NottyJSON.encoder.encode(value) else { return .null }
        return JSONParser.parse(data) ?? .null
    }
}

/// Written by ``JSONWriter``: the same bytes as ``NottyJSON/encoder`` (keys sorted), without it.
extension JSONValue: JSONWritable {
    public func write(to writer: inout JSONWriter) { writer.value(self) }
}

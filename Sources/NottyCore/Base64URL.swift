import Foundation

extension Data {
    /// Base64url without padding (RFC 7515 §2), as Web Push writes keys and JWTs. One pass over
    /// base64's bytes (no string searches: this is on the request path of every Opsgenie answer).
    public var base64URL: String {
        var bytes = Array(base64EncodedData())
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "+"): bytes[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): bytes[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads base64url, padded or not (and plain base64: browsers' keys come either way).
    public init?(base64URL text: String) {
        var bytes = Array(text.utf8).map { byte -> UInt8 in
            switch byte {
            case UInt8(ascii: "-"): UInt8(ascii: "+")
            case UInt8(ascii: "_"): UInt8(ascii: "/")
            default: byte
            }
        }
        bytes += Array(repeating: UInt8(ascii: "="), count: (4 - bytes.count % 4) % 4)
        self.init(base64Encoded: Data(bytes))
    }
}

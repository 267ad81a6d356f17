import Crypto
import Foundation
import HummingbirdBcrypt
import NottyCore

/// Random secrets and their stored forms.
public enum Secrets {
    /// A new opaque token or secret: 256 random bits, base64url, never starting with `-` (a
    /// secret like `-x…` would read as an option on a command line: `--client-secret -x…`).
    public static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        while true {
            var bytes = [UInt8](repeating: 0, count: 32)
            for i in bytes.indices { bytes[i] = generator.next() }
            let token = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            if token.first != "-" { return token }
        }
    }

    /// The stored form of a high-entropy token or client secret: SHA-256, hex.
    /// (Random 256-bit values need no slow hash; passwords do, see ``hashPassword(_:cost:)``.)
    public static func tokenHash(_ token: String) -> String {
        Hex.string(SHA256.hash(data: Data(token.utf8)))
    }

    /// A salted bcrypt hash of a password.
    public static func hashPassword(_ password: String, cost: UInt8) -> String {
        Bcrypt.hash(password, cost: cost)
    }

    public static func verifyPassword(_ password: String, hash: String) -> Bool {
        Bcrypt.verify(password, hash: hash)
    }

    /// Compares two strings in time independent of where they differ.
    public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in x.indices { difference |= x[i] ^ y[i] }
        return difference == 0
    }
}

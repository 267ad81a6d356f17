import Foundation

extension Duration {
    /// The duration in seconds, fractions kept.
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
    /// The duration in whole milliseconds.
    public var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
    /// The duration in whole nanoseconds (what NIO's `TimeAmount` counts).
    public var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

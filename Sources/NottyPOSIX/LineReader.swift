import Foundation

/// Reads one line from a pipe or socket that another process writes, waiting with poll(2):
/// blocks, so it runs off Swift's cooperative pool (``offThePool(_:)``).
public enum LineReader {
    /// One line from `descriptor` (without its newline), or nil at its end, on an error, or
    /// after `seconds`. Reads a byte at a time: nothing after the line is taken from the pipe.
    public static func line(from descriptor: Int32, seconds: Double) -> String? {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var byte: UInt8 = 0
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let answer = poll(&ready, 1, Int32(min(left * 1000 + 1, 1000)))
            if answer < 0 {
                if errno == EINTR { continue }
                return nil
            }
            guard answer > 0 else { continue }
            guard read(descriptor, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}

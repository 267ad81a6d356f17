import Foundation
import Logging
import Synchronization

/// swift-log's handler for notty: one line per event on standard error, in the format of
/// swift-log's `StreamLogHandler` (`<time> <level> <label>: <key=value …> [<source>] <message>`).
///
/// Unlike `StreamLogHandler`, it formats metadata only when a line is written. Hummingbird
/// sets a request id on a logger for every request; `StreamLogHandler` turned all of the
/// logger's metadata into text each time, even at levels that write nothing.
public struct LogLines: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata = Logger.Metadata()
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit = event.metadata { all.merge(explicit) { _, new in new } }
        if let error = event.error {
            all["error.message"] = "\(error)"
            all["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let pairs = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let line = "\(Self.timestamp()) \(event.level)\(label.isEmpty ? "" : " ")\(label):\(pairs) [\(event.source)] \(event.message)\n"
        // A failed write (a full disk, a closed pipe) loses the line, not the service.
        Self.output.withLock { _ in try? FileHandle.standardError.write(contentsOf: Data(line.utf8)) }
    }

    /// Makes every `Logger` of this process write through `LogLines` (once; later calls do nothing).
    public static func bootstrap() {
        let first = bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
        if first { LoggingSystem.bootstrap { label in LogLines(label: label) } }
    }

    private static let bootstrapped = Mutex(false)
    private static let output = Mutex(())

    private static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

import Foundation
import Synchronization

/// What a long-running `notty` (`notty poll`) holds in memory after it has started.
public enum ResidentMemory {
    /// Unmaps from this process the pages of its own program file's code mapping (`r-xp`:
    /// machine code, the relocation and symbol tables the loader read once, the unwind
    /// tables): start-up touches most of the 26 MiB of code once (the loader's relocations,
    /// argument parsing, the first sync), a running `notty poll` uses a small part of it
    /// again. The pages stay in the page cache; whatever is used again is mapped again on its
    /// first use, from the same file. Only a mapping that is exactly the file's (read-only,
    /// private, no page of it written by this process: no `Anonymous` pages) is touched, so
    /// nothing is lost. Returns the bytes that were resident in what it unmapped.
    @discardableResult
    public static func releaseStartupCode() -> Int {
        guard let program = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
              // Read to its end: String(contentsOfFile:) stops a /proc file at its first 4 KiB.
              let data = FileHandle(forReadingAtPath: "/proc/self/smaps")?.readDataToEndOfFile() else { return 0 }
        let smaps = String(decoding: data, as: UTF8.self)
        var released = 0
        for mapping in Mapping.read(smaps) where mapping.permissions == "r-xp" && mapping.path == program && mapping.written == 0 {
            guard let start = UnsafeMutableRawPointer(bitPattern: mapping.start), mapping.end > mapping.start else { continue }
            if madvise(start, Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 { released += mapping.resident }
        }
        return released
    }

    /// ``releaseStartupCode()`` the first time it is called in this process; later calls do nothing.
    public static func releaseStartupCodeOnce() {
        guard startup.withLock({ let first = $0; $0 = false; return first }) else { return }
        releaseStartupCode()
    }

    private static let startup = Mutex(true)

    /// One mapping of `/proc/self/smaps`.
    struct Mapping {
        var start: UInt, end: UInt
        var permissions: String
        var path: String
        var resident = 0
        /// Bytes of it written by this process (`Anonymous`: a private file page written to
        /// is copied into an anonymous one; `Private_Dirty` also counts pages of a file that
        /// is itself not yet written back, such as a program just built).
        var written = 0

        static func read(_ smaps: String) -> [Mapping] {
            var mappings: [Mapping] = []
            for line in smaps.split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard let first = fields.first else { continue }
                if first.hasSuffix(":") {
                    guard !mappings.isEmpty, fields.count >= 2, let kib = Int(fields[1]) else { continue }
                    switch first {
                    case "Rss:": mappings[mappings.count - 1].resident = kib * 1024
                    case "Anonymous:": mappings[mappings.count - 1].written = kib * 1024
                    default: break
                    }
                    continue
                }
                let bounds = first.split(separator: "-")
                guard bounds.count == 2, fields.count >= 5, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) else { continue }
                // The path is the rest of the line after the inode (it may hold spaces).
                let path = fields.count > 5 ? fields[5...].joined(separator: " ") : ""
                mappings.append(Mapping(start: start, end: end, permissions: String(fields[1]), path: path))
            }
            return mappings
        }
    }
}

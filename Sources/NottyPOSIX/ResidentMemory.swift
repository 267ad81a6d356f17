import CPOSIX
import Foundation
import Synchronization

/// What a long-running `notty` (`notty poll`) holds in memory after it has started.
public enum ResidentMemory {
    /// At most two malloc arenas for the whole process (glibc makes one per thread that
    /// allocates, up to 8 per core, and each keeps its free pages resident): the device's
    /// threads of their own (the store's watcher, work off the pool) share them instead.
    /// Call first thing, before any thread starts.
    public static func shareArenas() {
        _ = mallopt(-8, 2)  // -8: M_ARENA_MAX
    }

    /// Unmaps from this process the pages of its own program file's read-only mappings: the
    /// code (`r-xp`) and, where the linker gave them a segment of their own (lld does), the
    /// read-only data beside it (`r--p`: Swift's type metadata, the relocation and symbol
    /// tables the loader read once, the unwind tables). Start-up touches most of them once
    /// (the loader's relocations, argument parsing, the first sync); a running `notty poll`
    /// uses a small part again. The pages stay in the page cache; whatever is used again is
    /// mapped again on its first use, from the same file. Only a mapping that is exactly the
    /// file's (read-only, private, no page of it written by this process: no `Anonymous`
    /// pages, which leaves out the relocated `RELRO` data) is touched, so nothing is lost.
    /// Returns the bytes that were resident in what it unmapped.
    @discardableResult
    public static func releaseStartupCode() -> Int {
        guard let program = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            // Read to its end: String(contentsOfFile:) stops a /proc file at its first 4 KiB.
            case let fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC), fd >= 0
        else { return 0 }
        let data = readToEnd(fd)
        close(fd)
        let smaps = String(decoding: data, as: UTF8.self)
        var released = 0
        for mapping in Mapping.read(smaps)
        where Self.readOnly.contains(mapping.permissions) && mapping.path == program && mapping.written == 0 {
            guard let start = UnsafeMutableRawPointer(bitPattern: mapping.start), mapping.end > mapping.start else { continue }
            if madvise(start, Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 { released += mapping.resident }
        }
        return released
    }

    /// The permissions of the mappings ``releaseStartupCode()`` gives back: code, and read-only data.
    static let readOnly: Set<String> = ["r-xp", "r--p"]

    /// ``releaseStartupCode()`` the first time it is called in this process; later calls do nothing.
    public static func releaseStartupCodeOnce() {
        guard
            startup.withLock({
                let first = $0; $0 = false; return first
            })
        else { return }
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
                guard bounds.count == 2, fields.count >= 5, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) else {
                    continue
                }
                // The path is the rest of the line after the inode (it may hold spaces).
                let path = fields.count > 5 ? fields[5...].joined(separator: " ") : ""
                mappings.append(Mapping(start: start, end: end, permissions: String(fields[1]), path: path))
            }
            return mappings
        }
    }
}

// MARK: - The loader's tables

private let auxProgramHeaders: UInt = 3, auxProgramHeaderCount: UInt = 5  // AT_PHDR, AT_PHNUM

extension ResidentMemory {
    /// The sections of the program file that only the dynamic loader reads, and only before
    /// `main`: the relocations it applies (`.rela.dyn`, 3 MiB in a release `notty`) and the
    /// symbol tables it resolves them with (`.dynsym`, `.dynstr`, `.gnu.hash`, the versions).
    static let loaderSections: Set<String> = [".rela.dyn", ".dynsym", ".dynstr", ".gnu.hash", ".gnu.version", ".gnu.version_r"]

    /// Unmaps the pages of ``loaderSections`` from this process, once start-up is over: they
    /// are read-only pages of the program file (never written, so nothing is lost), and a later
    /// symbol lookup (a library loaded afterwards) maps what it reads again from the page cache.
    /// Does nothing for a program whose loaded code is written to (text relocations), or when
    /// the program file cannot be read. Returns the bytes of address space given back.
    @discardableResult
    public static func releaseLoaderTables() -> Int {
        var released = 0
        for pages in loaderTablePages() {
            guard let pointer = UnsafeMutableRawPointer(bitPattern: pages.lowerBound) else { continue }
            if madvise(pointer, Int(pages.count), MADV_DONTNEED) == 0 { released += Int(pages.count) }
        }
        return released
    }

    /// The whole pages of ``loaderSections`` in this process's memory; none when the program
    /// is not one this knows to be safe (see ``releaseLoaderTables()``).
    static func loaderTablePages() -> [Range<UInt>] {
        guard let base = programBase(), !hasTextRelocations(base: base) else { return [] }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        var ranges: [Range<UInt>] = []
        for section in (try? ELFSections.read(path: "/proc/self/exe")) ?? [] where loaderSections.contains(section.name) {
            // Allocated, read-only sections only; whole pages inside the section only.
            guard section.flags & 0x2 != 0, section.flags & 0x1 == 0, section.size > 0 else { continue }
            let start = (base + section.address + page - 1) / page * page
            let end = (base + section.address + section.size) / page * page
            if end > start { ranges.append(start..<end) }
        }
        return ranges
    }

    /// The address in the file's layout (`p_vaddr`) of the program's first program header of
    /// `type`, read from the headers in memory (`AT_PHDR`, `AT_PHNUM`).
    private static func programHeaderAddress(type: UInt32) -> UInt? {
        let headers = getauxval(auxProgramHeaders), count = Int(getauxval(auxProgramHeaderCount))
        guard count > 0, let table = UnsafeRawPointer(bitPattern: headers) else { return nil }
        for index in 0..<count {
            let header = table + index * 56  // Elf64_Phdr: p_type at 0, p_vaddr at 16
            if header.loadUnaligned(as: UInt32.self) == type { return UInt(header.loadUnaligned(fromByteOffset: 16, as: UInt64.self)) }
        }
        return nil
    }

    /// Where the program's first byte is mapped: the program headers' address in memory less
    /// their address in the file's layout (`PT_PHDR`).
    private static func programBase() -> UInt? {
        programHeaderAddress(type: 6).map { getauxval(auxProgramHeaders) &- $0 }
    }

    /// Whether the loader writes into the program's read-only segments (`DT_TEXTREL`, or
    /// `DF_TEXTREL` in `DT_FLAGS`): their pages then differ from the file's.
    private static func hasTextRelocations(base: UInt) -> Bool {
        // No dynamic section: not a program this knows.
        guard let address = programHeaderAddress(type: 2), var entry = UnsafeRawPointer(bitPattern: base + address) else { return true }
        while true {
            let tag = entry.loadUnaligned(as: Int64.self), value = entry.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            if tag == 0 { return false }  // DT_NULL
            if tag == 22 || (tag == 30 && value & 0x4 != 0) { return true }  // DT_TEXTREL, DT_FLAGS & DF_TEXTREL
            entry += 16
        }
    }
}

/// The section headers of an ELF64 little-endian file: name, flags, address and size.
struct ELFSections {
    var name: String
    var flags: UInt64
    var address: UInt
    var size: UInt

    struct Unreadable: Error {}

    static func read(path: String) throws -> [ELFSections] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Unreadable() }
        defer { close(descriptor) }
        func bytes(at offset: UInt64, count: Int) throws -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: count)
            guard count > 0, pread(descriptor, &buffer, count, off_t(offset)) == count else { throw Unreadable() }
            return buffer
        }
        let header = try bytes(at: 0, count: 64)
        guard header[0...3] == [0x7F, 0x45, 0x4C, 0x46], header[4] == 2, header[5] == 1 else { throw Unreadable() }  // ELF64, little-endian
        func load<T: FixedWidthInteger>(_ from: [UInt8], _ offset: Int, as: T.Type) -> T {
            from.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
        }
        let tableOffset = load(header, 0x28, as: UInt64.self)
        let entrySize = Int(load(header, 0x3A, as: UInt16.self)), count = Int(load(header, 0x3C, as: UInt16.self))
        let namesIndex = Int(load(header, 0x3E, as: UInt16.self))
        guard entrySize >= 64, count > 0, count < 65_280, namesIndex < count else { throw Unreadable() }
        let table = try bytes(at: tableOffset, count: entrySize * count)
        let namesHeader = namesIndex * entrySize
        let names = try bytes(
            at: load(table, namesHeader + 24, as: UInt64.self), count: Int(min(load(table, namesHeader + 32, as: UInt64.self), 1 << 20)))
        return (0..<count).map { index in
            let at = index * entrySize
            let nameOffset = Int(load(table, at, as: UInt32.self))
            let name = nameOffset < names.count ? String(decoding: names[nameOffset...].prefix { $0 != 0 }, as: UTF8.self) : ""
            return ELFSections(
                name: name, flags: load(table, at + 8, as: UInt64.self),
                address: UInt(load(table, at + 16, as: UInt64.self)), size: UInt(load(table, at + 32, as: UInt64.self)))
        }
    }
}

import Foundation
import Testing

@testable import NottyPOSIX

@Suite("Resident memory: the program's own code pages given back after start-up")
struct ResidentMemoryTests {
    @Test("smaps is read mapping by mapping: bounds, permissions, a path with spaces, Rss, Anonymous")
    func parsesSmaps() {
        let smaps = """
            55663f243000-556641ac2000 r-xp 00000000 fe:00 5374586                    /opt/my apps/notty
            Size:              41468 kB
            Rss:               23444 kB
            Private_Dirty:       100 kB
            Anonymous:             0 kB
            VmFlags: rd ex mr mw me
            556641ac2000-556641ac4000 rw-p 0287b000 fe:00 5374586                    /opt/my apps/notty
            Rss:                   8 kB
            Anonymous:             4 kB
            7ffd1000-7ffd2000 rw-p 00000000 00:00 0
            Rss:                   4 kB
            """
        let mappings = ResidentMemory.Mapping.read(smaps)
        #expect(mappings.count == 3)
        #expect(mappings[0].start == 0x5566_3f24_3000 && mappings[0].end == 0x5566_41ac_2000)
        #expect(mappings[0].permissions == "r-xp" && mappings[0].path == "/opt/my apps/notty")
        #expect(mappings[0].resident == 23444 * 1024 && mappings[0].written == 0)
        #expect(mappings[1].written == 4096 && mappings[1].resident == 8192)
        #expect(mappings[2].path == "" && mappings[2].resident == 4096)
    }

    @Test("a program's code and read-only data are unmapped and mapped again on use: the resident set shrinks, the code still runs")
    func releasesAndRunsOn() async {
        // In a process of its own (an exit test): the other tests of this process would all
        // have to map their code again at once.
        await #expect(processExitsWith: .success) {
            func codeResident() -> Int { programResident { ResidentMemory.readOnly.contains($0.permissions) && $0.written == 0 } }
            let before = codeResident()
            guard before > 0 else { print("no code mapping of this program in /proc/self/smaps"); exit(2) }
            let released = ResidentMemory.releaseStartupCode()
            guard released >= before / 2 else { print("released \(released) of \(before) resident bytes"); exit(3) }
            // Code runs again from the same file (a JSON round trip, sorting, string work).
            let words = (0..<1000).map { "word \($0 * 7919 % 1000)" }.sorted()
            guard let json = try? JSONSerialization.data(withJSONObject: ["words": words]),
                (try? JSONSerialization.jsonObject(with: json)) as? [String: [String]] == ["words": words]
            else { exit(4) }
            guard codeResident() < before else { print("the resident code did not shrink"); exit(5) }
        }
    }

    @Test("the program file's sections are read from its ELF headers: the loader's tables are allocated, read-only and where readelf puts them")
    func readsSections() throws {
        let sections = try ELFSections.read(path: "/proc/self/exe")
        let names = Set(sections.map(\.name))
        #expect(names.isSuperset(of: [".text", ".dynsym", ".dynstr"]), "\(names.sorted())")
        let text = try #require(sections.first { $0.name == ".text" })
        #expect(text.size > 0 && text.flags & 0x4 != 0, ".text is executable code")
        for section in sections where ResidentMemory.loaderSections.contains(section.name) {
            #expect(section.flags & 0x2 != 0 && section.flags & 0x1 == 0, "\(section.name) is allocated and read-only")
        }
        #expect(throws: ELFSections.Unreadable.self) { try ELFSections.read(path: "/proc/self/status") }
        #expect(throws: ELFSections.Unreadable.self) { try ELFSections.read(path: "/no/such/program") }
    }

    @Test("the loader's tables are given back and looked up again when needed: the resident set shrinks, symbols still resolve")
    func releasesTheLoaderTables() async {
        await #expect(processExitsWith: .success) {
            // Every page of the tables mapped in first. (How much of the released range the
            // resident set loses varies with the kernel's mapping of the file: in this test
            // program 0.4 of 2.1 MB, in a release notty 3.5 MiB; see docs/BENCHMARKS.md.)
            let pages = ResidentMemory.loaderTablePages()
            guard pages.contains(where: { !$0.isEmpty }) else { print("no loader tables found"); exit(2) }
            /// Reads a byte of every page (mapping each in).
            func touch() -> UInt8 {
                var sum: UInt8 = 0
                for range in pages {
                    for address in stride(from: range.lowerBound, to: range.upperBound, by: 4096) {
                        sum &+= UnsafePointer<UInt8>(bitPattern: address)!.pointee
                    }
                }
                return sum
            }
            let sum = touch()
            let before = programResident { _ in true }
            let released = ResidentMemory.releaseLoaderTables()
            let after = programResident { _ in true }
            guard released == pages.map(\.count).reduce(0, +) else { exit(3) }
            guard after < before else { print("resident \(before) → \(after) bytes, \(released) released"); exit(4) }
            // Lookups by name through the program's own symbol table and a library's; a library loaded now.
            guard dlsym(nil, "malloc") != nil, dlopen("libm.so.6", RTLD_NOW) != nil else { exit(5) }
            // The tables read again are the file's: the same bytes.
            guard touch() == sum else { exit(6) }
        }
    }
}

/// Bytes resident in this process's mappings of its own program file that `include` picks.
func programResident(_ include: (ResidentMemory.Mapping) -> Bool) -> Int {
    guard let program = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
        let data = FileHandle(forReadingAtPath: "/proc/self/smaps")?.readDataToEndOfFile()
    else { return 0 }
    return ResidentMemory.Mapping.read(String(decoding: data, as: UTF8.self))
        .filter { $0.path == program && include($0) }.map(\.resident).reduce(0, +)
}

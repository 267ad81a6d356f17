import Foundation
import Testing

/// docs/ARCHITECTURE.md's module map against Package.swift: one row per target under Sources/, its
/// imports the target's dependencies on other targets of the package, imports only going down.
@Suite("ARCHITECTURE.md's module map agrees with Package.swift")
struct ArchitectureMapTests {
    struct Target { var kind: String, name: String, dependencies: [String] }  // dependencies: ours only
    struct Row { var module: String, imports: [String] }
    enum Token: Equatable {
        case word(String)
        case string(String)
        case symbol(Character)
        var string: String? { if case .string(let text) = self { text } else { nil } }
    }

    /// Words, string literals and punctuation of Swift source, without its `//` comments.
    static func tokens(_ source: String) -> [Token] {
        let s = Array(source.unicodeScalars)
        var out: [Token] = [], i = 0
        func at(_ k: Int) -> Unicode.Scalar? { k < s.count ? s[k] : nil }
        func isWord(_ c: Unicode.Scalar) -> Bool { c == "_" || CharacterSet.alphanumerics.contains(c) }
        func take(while belongs: (Unicode.Scalar) -> Bool) -> String {
            var text = ""
            while let c = at(i), belongs(c) { text.unicodeScalars.append(c); i += 1 }
            return text
        }
        while let c = at(i) {
            if c == "/", at(i + 1) == "/" {
                _ = take { $0 != "\n" }
            } else if c == "\"" {  // up to the first quote not escaped (escapes are kept as written)
                var escaped = false
                i += 1
                out.append(
                    .string(
                        take { d in
                            defer { escaped = !escaped && d == "\\" }; return escaped || d != "\""
                        }))
                i += 1
            } else if isWord(c) {
                out.append(.word(take(while: isWord)))
            } else {
                if !c.properties.isWhitespace { out.append(.symbol(Character(c))) }
                i += 1
            }
        }
        return out
    }

    /// The tokens directly inside the bracket at `open` (not inside brackets within), and where it closes.
    static func inside(_ t: [Token], _ open: Int) -> (direct: [Int], close: Int) {
        var depth = 0, direct: [Int] = []
        for k in open..<t.count {
            if t[k] == .symbol(")") || t[k] == .symbol("]") { depth -= 1; if depth == 0 { return (direct, k) } }
            if depth == 1 { direct.append(k) }
            if t[k] == .symbol("(") || t[k] == .symbol("[") { depth += 1 }
        }
        return (direct, t.count - 1)
    }

    /// Every `.target(`, `.executableTarget(`, `.systemLibrary(` and `.testTarget(` of a manifest,
    /// with the plain string literals of its `dependencies: [ … ]` (what a `.product(…)` holds is left out).
    static func targets(inManifest source: String) -> [Target] {
        let kinds: Set = ["target", "executableTarget", "systemLibrary", "testTarget"]
        let t = tokens(source)
        var found: [Target] = [], i = 0
        while i + 2 < t.count {
            guard t[i] == .symbol("."), case .word(let kind) = t[i + 1], kinds.contains(kind), t[i + 2] == .symbol("(") else { i += 1; continue }
            let (arguments, end) = inside(t, i + 2)
            var target = Target(kind: kind, name: "", dependencies: [])
            for (n, label) in arguments.enumerated() where n + 2 < arguments.count && t[arguments[n + 1]] == .symbol(":") {
                let value = arguments[n + 2]
                if t[label] == .word("name"), let name = t[value].string { target.name = name }
                if t[label] == .word("dependencies"), t[value] == .symbol("[") {
                    target.dependencies = inside(t, value).direct.compactMap { t[$0].string }
                }
            }
            found.append(target)
            i = end + 1
        }
        return found
    }

    /// The rows of the markdown table whose header is `| module | imports | what it is for |`.
    static func moduleMap(_ markdown: String) -> [Row] {
        func cells(_ line: String) -> [String] {
            let parts = line.trimmingCharacters(in: .whitespaces).split(separator: "|", omittingEmptySubsequences: false)
            guard parts.count > 1, parts[0].isEmpty else { return [] }
            return parts.dropFirst().dropLast(parts.last?.isEmpty == true ? 1 : 0).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        func quoted(_ cell: String) -> [String] {  // what stands between backticks
            cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
        }
        let lines = markdown.components(separatedBy: "\n")
        guard let header = lines.firstIndex(where: { cells($0) == ["module", "imports", "what it is for"] }) else { return [] }
        return lines.dropFirst(header + 2).map(cells).prefix { $0.count >= 2 }  // from below the |---| line to the table's end
            .map { Row(module: quoted($0[0]).first ?? $0[0], imports: quoted($0[1])) }
    }

    /// Package.swift's targets and the map's rows, read from the repository this file is in.
    static func load() throws -> (targets: [Target], rows: [Row]) {
        let root = URL(fileURLWithPath: #filePath)  // Tests/NottyCoreTests/ArchitectureMapTests.swift
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        func read(_ path: String) throws -> String { try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8) }
        let rows = moduleMap(try read("docs/ARCHITECTURE.md"))
        try #require(!rows.isEmpty, "docs/ARCHITECTURE.md has no table headed `| module | imports | what it is for |`: put the map back")
        return (targets(inManifest: try read("Package.swift")), rows)
    }

    @Test("the manifest parser reads targets on one line and on several, and leaves products and comments out")
    func parser() {
        let manifest = """
            .package(url: "https://example.com/a.git", from: "1.0.0"),  // "not a target"
            .target(name: "A"), .systemLibrary(name: "CB", providers: [.apt(["libb-dev"])]),
            .target(
                name: "C",  // .target(name: "Commented", dependencies: ["X"]),
                dependencies: ["A", .product(name: "Logging", package: "swift-log"), "CB"]),
            .testTarget(name: "CTests", dependencies: ["C"], exclude: ["Golden"]),
            """
        let found = Self.targets(inManifest: manifest).map { "\($0.kind) \($0.name) \($0.dependencies)" }
        #expect(found == ["target A []", "systemLibrary CB []", "target C [\"A\", \"CB\"]", "testTarget CTests [\"C\"]"])
    }

    @Test("every target under Sources/ has one row in the map, and every row is such a target")
    func everyTargetHasARow() throws {
        let (targets, rows) = try Self.load()
        let inPackage = Set(targets.filter { $0.kind != "testTarget" }.map(\.name)), inMap = Set(rows.map(\.module))
        let missing = inPackage.subtracting(inMap).sorted(), extra = inMap.subtracting(inPackage).sorted()
        #expect(missing.isEmpty, "Package.swift has targets \(missing) that ARCHITECTURE.md's map lacks: add a row for each")
        #expect(extra.isEmpty, "ARCHITECTURE.md's map has rows \(extra) that Package.swift has no target for: remove them (or add the targets)")
        #expect(rows.count == inMap.count, "ARCHITECTURE.md's map names a module twice: keep one row for each")
    }

    @Test("each row's imports are its target's dependencies on other targets of the package")
    func importsAreThePackages() throws {
        let (targets, rows) = try Self.load()
        let byName = Dictionary(targets.map { ($0.name, $0.dependencies) }, uniquingKeysWith: { first, _ in first })
        for row in rows {
            guard let dependencies = byName[row.module]?.sorted() else { continue }  // everyTargetHasARow says so
            #expect(
                Set(dependencies) == Set(row.imports),
                "Package.swift says \(row.module) depends on \(dependencies); ARCHITECTURE.md's map says \(row.imports.sorted()): update the map")
        }
    }

    /// The package's modules each file under `Sources/<module>` imports (`import X`,
    /// `@testable import X`, `import func X.f`, `@_exported import …`), by module.
    static func sourceImports(of modules: Set<String>) throws -> [String: Set<String>] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var found: [String: Set<String>] = [:]
        for module in modules {
            let folder = root.appendingPathComponent("Sources/\(module)")
            guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { continue }
            var imported: Set<String> = []
            for case let file as URL in files where file.pathExtension == "swift" || file.pathExtension == "h" {
                for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                    let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init).filter { !$0.hasPrefix("@") }
                    guard words.first == "import", words.count >= 2 else { continue }
                    let name =
                        (words.count >= 3 && ["func", "struct", "class", "enum", "protocol", "typealias", "var", "let"].contains(words[1])
                        ? words[2] : words[1])
                        .split(separator: ".").first.map(String.init) ?? ""
                    if modules.contains(name), name != module { imported.insert(name) }
                }
            }
            found[module] = imported
        }
        return found
    }

    @Test("each row's imports are what its module's source files import: SwiftPM lets a module import what its dependencies import, the map does not")
    func importsAreTheSources() throws {
        let (targets, rows) = try Self.load()
        let modules = Set(targets.filter { $0.kind != "testTarget" }.map(\.name))
        let imported = try Self.sourceImports(of: modules)
        for row in rows where modules.contains(row.module) {
            let inSources = imported[row.module] ?? []
            #expect(
                inSources.isSubset(of: Set(row.imports)),
                "Sources/\(row.module) imports \(inSources.subtracting(row.imports).sorted()), which ARCHITECTURE.md's map and Package.swift do not give it: add the dependency, or import through what it has"
            )
            let unused = Set(row.imports).subtracting(inSources).filter { !$0.hasPrefix("C") }
            #expect(unused.isEmpty, "\(row.module) depends on \(unused.sorted()) but no file of it imports them: drop the dependency")
        }
    }

    @Test("imports only go down the map: every import of a row is a row above it")
    func importsGoDown() throws {
        var above: Set<String> = []
        for row in try Self.load().rows {
            let notAbove = row.imports.filter { !above.contains($0) }
            #expect(notAbove.isEmpty, "ARCHITECTURE.md's map has \(row.module) import \(notAbove), not rows above it: move its row below theirs")
            above.insert(row.module)
        }
    }
}

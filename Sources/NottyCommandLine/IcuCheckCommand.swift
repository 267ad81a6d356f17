import ArgumentParser
import Foundation
import NottyCore

/// `notty icu-check ZONE…` and `notty-server icu-check ZONE…` (hidden): what the program shows
/// that ICU's data decides, in those zones (``IcuCheck``), so that a release build (ICU's data
/// trimmed) can be compared with a debug build (all of it). No zone: every zone ICU knows.
public struct IcuCheckCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "icu-check", abstract: "Print what ICU's data decides of times and text, to compare builds.", shouldDisplay: false)

    @Argument(help: "Time zone names (IANA); none: every zone ICU knows.") var zones: [String] = []

    public init() {}

    public func run() throws {
        let names = zones.isEmpty ? TimeZone.knownTimeZoneIdentifiers.sorted() : zones
        var output = IcuCheck.lines(zones: names).joined(separator: "\n")
        output += "\n"
        FileHandle.standardOutput.write(Data(output.utf8))
    }
}

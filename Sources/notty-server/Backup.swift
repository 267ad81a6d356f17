import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyPOSIX
import NottyServiceSQLite

extension Admin {
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "backup",
            abstract: "Copy the service's SQLite store to FILE while it serves, checked before it says done.",
            discussion: """
                The copy is taken in one read transaction (SQLite's VACUUM INTO): consistent \
                however many publishes arrive meanwhile, and compact. SQLite's integrity_check \
                runs on it before it gets its name; a file that exists is never overwritten. \
                Example: notty admin backup /var/backups/notty-$(date +%F).sqlite \
                PostgreSQL: use pg_dump (docs/GUIDE.md, Backups and upgrades).
                """)
        @OptionGroup var storage: StorageOptions
        @Argument(help: "Where to write the copy.", completion: .file()) var file: String

        func run() async throws {
            try await reportingErrors {
                guard let path = storage.sqlitePath else {
                    throw CLIError(
                        "the store is PostgreSQL: back it up with pg_dump --format=custom --file=notty.dump 'URL' (docs/GUIDE.md, Backups and upgrades)"
                    )
                }
                let started = ContinuousClock.now
                let summary = try await offThePool { try SQLiteBackup.backup(from: path, to: file) }
                let took = ContinuousClock.now - started
                say(
                    "backed up \(path) to \(file): \(summary.users) user(s), \(summary.notifications) notification(s), "
                        + String(
                            format: "%.1f MiB, in %.2f s; integrity_check ok", Double(summary.bytes) / 1_048_576,
                            took.seconds))
            }
        }
    }

    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract: "Put a backup in place of the service's SQLite store (the service stopped).",
            discussion: """
                Refuses while a notty serve uses the store. Checks FILE first (integrity_check, \
                a store of this notty-server or an older one), keeps the store it replaces beside \
                it (PATH.before-restore-TIME) and leaves a store the next notty serve opens. \
                Every device resyncs once by itself (its cursor is answered 410) and then sends \
                the changes it had not sent: nothing a device holds is lost.
                """)
        @OptionGroup var storage: StorageOptions
        @Argument(help: "The backup (from notty admin backup).", completion: .file()) var file: String

        func run() async throws {
            try await reportingErrors {
                guard let path = storage.sqlitePath else {
                    throw CLIError("the store is PostgreSQL: restore it with pg_restore (docs/GUIDE.md, Backups and upgrades)")
                }
                let (summary, aside) = try await offThePool { try SQLiteBackup.restore(file, into: path) }
                say(
                    "restored \(file) to \(path): \(summary.users) user(s), \(summary.notifications) notification(s)"
                        + (aside.map { "; the store it replaced is at \($0)" } ?? "") + ". Devices resync by themselves.")
            }
        }
    }
}

import ArgumentParser
import Foundation
import NottyCommandLine
import NottySecrets
import NottyService

extension Admin {
    struct RotateKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-key",
            abstract: "Seal every stored secret with a new key, while the service serves.",
            discussion: """
                Makes NEWFILE with a new key (or takes the key in it, when it exists), hands the \
                key over to every running instance through the store, and seals every secret \
                with it, again until nothing is left under the old key. NEWFILE holds the old \
                key too (a second line: it only opens). When the key in use is the default \
                secret.key beside the SQLite store, that file is replaced by NEWFILE's keys; else \
                give every instance --secret-key-file NEWFILE before it next starts. \
                Example: notty admin rotate-key /etc/notty/secret-2026.key
                """)
        @OptionGroup var storage: StorageOptions
        @Argument(help: "The new key file (made, 0600, unless it exists).", completion: .file()) var file: String

        func run() async throws {
            try await reportingErrors {
                let store = try await storage.open()
                let box = try await storage.secrets(store)
                let old = box.primary
                let new: SecretBox.Key
                if FileManager.default.fileExists(atPath: file) {
                    if let advice = FilePrivacy.advice(file) { warn(advice) }
                    new = try SecretKeyFile.read(file)[0]
                } else {
                    new = .random()
                    try SecretKeyFile.write([new, old], to: file)
                }
                guard new != old else { throw CLIError("\(file) holds the key in use (\(old.id)): give a new file, which rotate-key makes") }
                let started = ContinuousClock.now
                let rotation = try await SecretKeeping.rotate(box, to: new, storage: store) { say($0) }
                let seconds = Double((ContinuousClock.now - started).components.seconds)
                let inUse = storage.keyPath
                var done =
                    "sealed \(rotation.resealed) secret(s) with key \(new.id) (was \(old.id)) in \(rotation.passes) pass(es), \(Int(seconds)) s"
                if storage.secretKeyFile == nil && ProcessInfo.processInfo.environment["NOTTY_SECRET_KEY_FILE"] == nil {
                    // The default key beside the store: it becomes the new one (the old one second).
                    let keys = [new, old]
                    let temporary = inUse + ".new"
                    unlink(temporary)
                    try SecretKeyFile.write(keys, to: temporary)
                    guard rename(temporary, inUse) == 0 else {
                        throw CLIError("cannot replace \(inUse) with the new key: \(String(cString: strerror(errno)))")
                    }
                    done += "; \(inUse) now holds it"
                } else {
                    done += "; give every instance --secret-key-file \(file) before it next starts"
                }
                say(done + ". Back the new key up apart from the store.")
                try? await store.close()
            }
        }
    }
}

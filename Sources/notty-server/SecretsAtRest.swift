import Foundation
import NottyCommandLine
import NottyService

#if canImport(Glibc)
import Glibc
import NottySecrets
#endif

/// The service's secret key file (docs/GUIDE.md, "Secrets at rest"): one key per line (base64
/// of 32 bytes; `#` lines are comments), the first seals, the others only open (what an older
/// key sealed, during a rotation). Made at first start, 0600, beside the SQLite store unless
/// `--secret-key-file` names it (for PostgreSQL, where every instance needs the same one).
enum SecretKeyFile {
    /// Reads the key file at `path`, or makes it when it is missing and the store has sealed
    /// nothing yet, and checks it against the store. Every failure is one line that names the
    /// file and what to do.
    static func open(_ path: String, storage: any SecretStorage, forget: Bool = false, warning: (String) -> Void) async throws -> SecretBox {
        let keys: [SecretBox.Key]
        if FileManager.default.fileExists(atPath: path) {
            if let advice = FilePrivacy.advice(path) { warning(advice) }
            keys = try read(path)
        } else {
            if let record = try await storage.secretKeyRecord("check"), let id = SecretBox.keyId(record), !forget {
                throw CLIError(
                    "the secret key file \(path) does not exist, but this store's secrets were sealed with key \(id): give that key file with --secret-key-file (keep it backed up apart from the store); to start without those secrets, add --forget-sealed-secrets"
                )
            }
            let key = SecretBox.Key.random()
            if try write([key], to: path) {
                keys = [key]
            } else {
                keys = try await madeMeanwhile(path)  // another instance made it first: that one is the key
            }
        }
        let box = SecretBox(keys: keys)
        if case .otherKey(let id) = try await SecretKeeping.verify(box, storage: storage, forget: forget) {
            throw CLIError(
                "the secret key file \(path) holds key \(keys.map(\.id).joined(separator: ", ")), but this store's secrets were sealed with key \(id): give the key file of this store with --secret-key-file; to start without those secrets, add --forget-sealed-secrets"
            )
        }
        return box
    }

    static func read(_ path: String) throws -> [SecretBox.Key] {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw CLIError(
                "cannot read the secret key file \(path): \((error as NSError).localizedDescription). The service's user must own it (chmod 600 \(path))"
            )
        }
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty && !$0.hasPrefix("#")
        }
        let keys = lines.compactMap(SecretBox.Key.init(line:))
        guard !keys.isEmpty, keys.count == lines.count else {
            throw CLIError(
                "\(path) is not a notty secret key file (a line of base64, 32 bytes, per key): restore it from your backup of the key, or give --secret-key-file"
            )
        }
        return keys
    }

    /// The key file another process is making now (it appeared as this one was to make it).
    static func madeMeanwhile(_ path: String) async throws -> [SecretBox.Key] {
        for _ in 0..<50 {
            if let keys = try? read(path) { return keys }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try read(path)
    }

    /// Writes `keys` to a new file at `path`, 0600 from its first byte (in a 0700 folder when
    /// the folder is new); never over a file that is there: false when one is.
    @discardableResult
    static func write(_ keys: [SecretBox.Key], to path: String) throws -> Bool {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let text =
            "# notty's secret key: back it up apart from the store (GUIDE, Secrets at rest). The first line seals.\n"
            + keys.map(\.line).joined(separator: "\n") + "\n"
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 && errno == EEXIST { return false }
        guard fd >= 0 else {
            throw CLIError(
                "cannot make the secret key file \(path): \(String(cString: strerror(errno))). Check the folder, or give --secret-key-file")
        }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard Glibc.write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else {
            unlink(path)
            throw CLIError("cannot write the secret key file \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }
}

/// Files that hold users' data are the service's user's alone: what it makes is 0600 (folders
/// 0700) whatever the umask, and what it finds readable by others is one line of warning with
/// the command that fixes it.
enum FilePrivacy {
    /// From here on every file this process makes is its user's alone.
    static func restrictNewFiles() { umask(0o077) }

    /// The warning for `path` (and a SQLite store's `-wal` and `-shm` beside it) when others may
    /// read it; nil when they may not.
    static func advice(_ path: String, store: Bool = false) -> String? {
        let files = store ? [path, path + "-wal", path + "-shm"] : [path]
        let open = files.filter { file in
            var info = stat()
            return stat(file, &info) == 0 && info.st_mode & 0o077 != 0
        }
        guard !open.isEmpty else { return nil }
        let folder = (path as NSString).deletingLastPathComponent
        var info = stat()
        let folderOpen = !folder.isEmpty && stat(folder, &info) == 0 && info.st_mode & 0o077 != 0
        return "\(open.joined(separator: ", ")) may be read by other users of this machine: chmod 600 \(open.joined(separator: " "))"
            + (folderOpen ? " && chmod 700 \(folder)" : "")
    }
}

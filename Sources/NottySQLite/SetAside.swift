import Foundation

/// The files of an SQLite database kept when a command replaces it (`notty resync`, `notty
/// admin restore`): the database, its `-wal` and its `-shm` moved beside it as
/// `PATH.before-LABEL-TIME` with the same suffixes.
public enum DatabaseFiles {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Moves the database at `path` aside, readable by its owner alone (it holds what the store
    /// held); returns its new path, nil when there is none.
    public static func setAside(_ path: String, label: String, now: Date = Date()) throws -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let stamp = ISO8601DateFormatter().string(from: now).replacingOccurrences(of: ":", with: "").prefix(17)
        let kept = "\(path).before-\(label)-\(stamp)"
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            guard rename(path + suffix, kept + suffix) == 0 else {
                throw Failure(description: "cannot move \(path + suffix) aside to \(kept + suffix): \(String(cString: strerror(errno)))")
            }
            chmod(kept + suffix, 0o600)
        }
        return kept
    }
}

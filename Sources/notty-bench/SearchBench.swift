import Foundation
import GRDB
import Logging
import NottyCore
import NottyRecords
import NottySecrets
import NottyService
import NottyServicePostgres
import NottyServiceSQLite
import NottyTestSupport
import PostgresNIO

/// `notty-bench search [--count N] [--no-postgres]`: the service's search (PROTOCOL.md §17) over N
/// notifications of one user (default 1,000,000), on SQLite and on PostgreSQL, each store
/// filled through the storage's own batch publish (the index kept by the same transactions).
///
/// Printed: the fill's rate, a two-word search's and a search with `app:` and `is:unread`'s
/// latencies (the storage's `list`, a window of 50 of All, in this process: no HTTP), beside
/// today's `LIKE` for the same text on the same store, and the CPU a publish costs with the
/// index and without it (its triggers dropped on SQLite, its GIN index on PostgreSQL).
///
/// The text: titles of 4 words and bodies of 12 from a vocabulary of 20,000 made-up words drawn
/// Zipf-like (the commonest word is in about one notification in eight; none is the start of
/// another), 20 apps, 50 groups,
/// half read. Each query's two words come from one random notification's text, so common words
/// are searched for as often as people would.
struct SearchBench {
    var rows: Int
    var postgres: Bool
    /// `--store PATH`: the SQLite store is kept there, and one already there is asked again
    /// without filling (for trying a change of the search on the same rows).
    var store: String?
    static let vocabulary = 20_000
    static let apps = 20

    func run() async throws {
        print("notty-bench search — \(rows) notifications of one user")
        let directory = Repository.temporaryDirectory("notty-search-bench")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = store ?? directory.appendingPathComponent("search.sqlite").path
        let filled = store.map { FileManager.default.fileExists(atPath: $0) } ?? false
        let sqlite = try SQLiteStorage(path: path)
        try await measure("SQLite", storage: sqlite, like: SQLiteLike(path: path), filled: filled ? try Self.onlyUser(path) : nil)
        try await publishCost("SQLite") { index in
            try await Self.sqliteStore(
                in: directory, dropping: index ? [] : ["insert", "delete", "update"].map { "DROP TRIGGER notification_words_\($0)" })
        }
        try await sqlite.close()
        guard postgres else { return }
        let cluster = try await TestPostgres.Cluster.start()
        defer { Task { try? await cluster.stop() } }
        let url = try await TestPostgres.createDatabase(on: cluster.url)
        let storage = try await PostgresStorage.connect(url: PostgresURL(url))
        let like = try await PostgresLike(url: url)
        try await measure("PostgreSQL", storage: storage, like: like)
        try await like.connection.close()
        try await publishCost("PostgreSQL") { index in
            let database = try await TestPostgres.createDatabase(on: cluster.url)
            let storage = try await PostgresStorage.connect(url: PostgresURL(database))
            if !index { try await TestPostgres.psql(database, "DROP INDEX notifications_words") }
            return storage
        }
        try await storage.close()
    }

    /// A new SQLite store in `directory` for a publish-cost run, `dropping` (SQL) run on it first:
    /// what the run measures is without.
    static func sqliteStore(in directory: URL, dropping statements: [String]) async throws -> SQLiteStorage {
        let file = directory.appendingPathComponent("publish-\(UUID().uuidString).sqlite").path
        let storage = try SQLiteStorage(path: file)
        guard !statements.isEmpty else { return storage }
        let queue = try DatabaseQueue(path: file)
        try await queue.write { db in
            for statement in statements { try db.execute(sql: statement) }
        }
        try queue.close()
        return storage
    }

    // MARK: - The text

    /// Word `rank` of the vocabulary: made of syllables, so that it folds and splits as a word.
    static func word(_ rank: Int) -> String {
        let syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "be", "du", "fa", "go", "hu", "je", "pi", "so"]
        var n = rank
        var word = ""
        repeat {
            word += syllables[n % syllables.count]
            n /= syllables.count
        } while n > 0
        // A last letter no syllable has: no word is the start of another (a made-up
        // vocabulary of syllables would otherwise make every short word the start of thousands).
        return word + (rank % 7 == 0 ? "x" : "q")
    }

    /// Zipf-like ranks: the cumulative weights of 1/(rank+1).
    static let cumulative: [Double] = {
        var total = 0.0
        return (0..<vocabulary).map { rank in
            total += 1 / Double(rank + 1)
            return total
        }
    }()

    static func randomRank(_ random: inout SeededRandom) -> Int {
        let target = Double.random(in: 0..<cumulative.last!, using: &random)
        var (low, high) = (0, cumulative.count - 1)
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < target { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Notification `i`'s title and body words (the same every time).
    static func text(_ i: Int) -> (title: [String], body: [String]) {
        var random = SeededRandom(seed: UInt64(i))
        return ((0..<4).map { _ in word(randomRank(&random)) }, (0..<12).map { _ in word(randomRank(&random)) })
    }

    static func request(_ i: Int) throws -> PublishRequest {
        let (title, body) = text(i)
        let json = """
            {"appNotificationId":"n\(i)","groupName":"group \(i % 50)","payload":{"visualContent":{"title":"\(title.joined(separator: " "))","body":"\(body.joined(separator: " "))."}}}
            """
        return try PublishRequest(body: Data(json.utf8))
    }

    static func host(_ i: Int) -> String { "app\(i % apps).example.com" }

    // MARK: - Filling and asking

    static func addUser(_ storage: any ServiceStorage) async throws -> String {
        let user = UserRecord(id: UUID().uuidString.lowercased(), userName: "alice", displayName: "Alice", passwordHash: "unused")
        try await storage.createUser(user)
        return user.id
    }

    /// Publishes `count` notifications in batches of 500; returns their ids.
    @discardableResult
    func fill(_ storage: any ServiceStorage, userId: String, count: Int, from: Int = 0) async throws -> [String] {
        let secrets = SecretBox.ephemeral()
        let now = Date()
        let batch = 500
        var start = from
        var ids: [String] = []
        while start < from + count {
            let inputs = try (start..<min(from + count, start + batch)).map { i in
                PublishInput(
                    userId: userId, hostName: Self.host(i), request: try Self.request(i), expiration: now + 86_400 * 365,
                    now: now - Double(count - (i - from)), secrets: secrets)
            }
            ids += try await storage.publish(batch: inputs).map(\.id)
            start += batch
        }
        return ids
    }

    /// The user of a store the bench filled before.
    static func onlyUser(_ path: String) throws -> String {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in try String.fetchOne(db, sql: "SELECT id FROM users LIMIT 1") } ?? ""
    }

    /// `filled`: the user of a store filled before (nothing is written then).
    func measure(_ name: String, storage: any ServiceStorage, like: any LikeSearch, filled: String? = nil) async throws {
        let userId: String
        if let filled {
            userId = filled
            print("\(name): the store filled before")
        } else {
            userId = try await Self.addUser(storage)
            let fillTime = try await milliseconds { try await fill(storage, userId: userId, count: rows) } / 1000
            // Half read, as a long history is.
            try await like.markHalfRead(userId: userId)
            print(
                String(
                    format: "%@: filled with %d in %.1f s (%.0f a second, through the batch publish)", name, rows, fillTime, Double(rows) / fillTime))
        }
        var random = SeededRandom(seed: 65)
        let now = Date()
        var (twoWords, withFields, today) = ([Double](), [Double](), [Double]())
        var matched: [Int] = []
        var slow: [(Double, String)] = []
        for round in 0..<(quick ? 60 : 220) {
            let i = Int.random(in: 0..<rows, using: &random)
            let (title, body) = Self.text(i)
            let words = title + body
            let (a, b) = (words[Int.random(in: 0..<words.count, using: &random)], words[Int.random(in: 0..<words.count, using: &random)])
            let plain = try SearchQuery.parse("\(a) \(b)")
            let fields = try SearchQuery.parse("app:\(Self.host(i)) is:unread \(a) \(b)")
            var found = 0
            let first = try await milliseconds {
                found = try await storage.list(userId: userId, view: .all, top: 50, skip: 0, search: plain, now: now).count
            }
            let second = try await milliseconds { _ = try await storage.list(userId: userId, view: .all, top: 50, skip: 0, search: fields, now: now) }
            guard round >= 20 else { continue }  // warming up
            twoWords.append(first)
            withFields.append(second)
            slow += [(first, "\(a) \(b)"), (second, "app:… is:unread \(a) \(b)")]
            // Today's LIKE reads the whole feed each time: every fourth query is enough for its figures.
            if round % 4 == 0 { today.append(try await milliseconds { try await like.search(userId: userId, text: "\(a) \(b)", now: now) }) }
            matched.append(found)
        }
        print("  two words (a window of 50 of All): \(summary(twoWords))")
        print("  app: is:unread and two words:       \(summary(withFields))")
        print("  today's LIKE, the same text:        \(summary(today))")
        print("  (windows full: \(matched.filter { $0 == 50 }.count) of \(matched.count))")
        for fields in [false, true] {
            let asked = slow.filter { $0.1.hasPrefix("app:") == fields }.sorted { $0.0 > $1.0 }.prefix(4)
            print("  slowest: " + asked.map { String(format: "%.1f ms ", $0.0) + $0.1 }.joined(separator: "; "))
        }
    }

    /// The CPU a publish and a state change cost with `feature` (`make(true)`) and without it.
    func publishCost(_ name: String, feature: String = "the index", _ make: (Bool) async throws -> any ServiceStorage) async throws {
        let count = quick ? 5000 : 20_000
        var (cpu, reads): ([Bool: Double], [Bool: Double]) = ([:], [:])
        func spent() -> Double { processCPUSeconds() + (name == "PostgreSQL" ? cpuSeconds(processesNamed: "postgres").seconds : 0) }
        for index in [false, true, false, true] {
            let storage = try await make(index)
            let userId = try await Self.addUser(storage)
            var before = spent()
            let ids = try await fill(storage, userId: userId, count: count)
            cpu[index, default: 0] += (spent() - before) / Double(2 * count) * 1e6
            // Then each one read, 100 changes a request, as a device sends them.
            before = spent()
            for start in stride(from: 0, to: ids.count, by: 100) {
                let mutations = ids[start..<min(ids.count, start + 100)].map { Mutation(id: $0, change: StateChange(readState: .read)) }
                _ = try await storage.mutate(userId: userId, mutations: mutations, now: Date())
            }
            reads[index, default: 0] += (spent() - before) / Double(2 * count) * 1e6
            try await storage.close()
        }
        for (what, figures) in [("publish", cpu), ("state change (read)", reads)] {
            let (with, without) = (figures[true]!, figures[false]!)
            print(
                String(
                    format: "  a %@'s CPU (%d, batches of %d): %.0f µs with %@, %.0f µs without: %.2f×", what, count,
                    what == "publish" ? 500 : 100, with, feature, without, with / without))
        }
    }
}

/// Today's search (before the index): the whole text as a `LIKE` of title, body, app and group.
protocol LikeSearch: Sendable {
    func search(userId: String, text: String, now: Date) async throws
    func markHalfRead(userId: String) async throws
}

struct SQLiteLike: LikeSearch {
    let queue: DatabasePool

    init(path: String) throws { queue = try DatabasePool(path: path) }

    func search(userId: String, text: String, now: Date) async throws {
        let pattern = "%" + text + "%"
        _ = try await queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM notifications WHERE user_id = ?1 AND deleted = 0 AND expires > ?2
                    AND (title LIKE ?3 OR body LIKE ?3 OR host_name LIKE ?3 OR group_name LIKE ?3) ORDER BY created DESC, id DESC LIMIT 50
                    """, arguments: [userId, ISOTime.millis(now), pattern])
        }
    }

    /// Half of the rows at random (not every other rowid: the apps take turns by rowid, and
    /// whole apps would be read).
    func markHalfRead(userId: String) async throws {
        try await queue.write { db in try db.execute(sql: "UPDATE notifications SET read_state = 'Read' WHERE random() & 1 = 0") }
    }
}

final class PostgresLike: LikeSearch {
    let connection: PostgresConnection

    init(url: String) async throws {
        let parsed = try PostgresURL(url)
        let configuration = PostgresConnection.Configuration(
            host: parsed.host, port: parsed.port, username: parsed.user, password: parsed.password, database: parsed.database, tls: .disable)
        connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Logger(label: "bench"))
    }

    func search(userId: String, text: String, now: Date) async throws {
        let pattern = "%" + text + "%"
        let rows = try await connection.query(
            """
            SELECT * FROM notifications WHERE user_id = \(userId) AND NOT deleted AND expires > \(ISOTime.millis(now))
            AND (title ILIKE \(pattern) OR body ILIKE \(pattern) OR host_name ILIKE \(pattern) OR group_name ILIKE \(pattern))
            ORDER BY created DESC, id DESC LIMIT 50
            """, logger: Logger(label: "bench"))
        for try await _ in rows {}
    }

    func markHalfRead(userId: String) async throws {
        for statement: PostgresQuery in ["UPDATE notifications SET read_state = 'Read' WHERE hashtext(id) % 2 = 0", "VACUUM ANALYZE notifications"] {
            for try await _ in try await connection.query(statement, logger: Logger(label: "bench")) {}
        }
    }
}

/// This process's user and system CPU time so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

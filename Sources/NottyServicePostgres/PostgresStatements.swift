import Foundation
import NottyRecords
import NottyService
import NottyStorageSupport
import PostgresNIO

/// The statements of every feed write, prepared once per connection: PostgreSQL parses and
/// plans them once, and a batch sends only their values. Rows go as one array a column
/// (`unnest`), so a statement's text is the same however many rows it writes.
enum FeedStatements {
    /// Takes the feed locks of `users` (``FeedLock``) and reserves `positions` change positions
    /// after them: the locking subquery is an InitPlan, run once before the first position is
    /// drawn.
    ///
    /// (`LIMIT $2` changes no result: it makes PostgreSQL's generic plan, which guesses how many
    /// rows `generate_series` gives, look no dearer than one made for each count, so that the
    /// statement is planned once rather than at every call.)
    struct LockAndReserve: PostgresPreparedStatement {
        static let sql = """
            SELECT nextval('notty_seq') FROM generate_series(1, $2::integer) WHERE (\(FeedLock.count("$1"))) >= 0 LIMIT $2
            """
        typealias Row = Int64
        let users: [String]
        let positions: Int32

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(users)
            bindings.append(positions)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    /// Takes the feed locks of `users`, reserving nothing.
    struct Lock: PostgresPreparedStatement {
        static let sql = FeedLock.count("$1")
        typealias Row = ()
        let users: [String]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(users)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }

    /// More positions, later in a transaction that holds its users' locks already.
    ///
    /// (`LIMIT $1` changes no result: it makes PostgreSQL's generic plan, which guesses how many
    /// rows `generate_series` gives, look no dearer than one made for each count, so that the
    /// statement is planned once rather than at every call.)
    struct Reserve: PostgresPreparedStatement {
        static let sql = "SELECT nextval('notty_seq') FROM generate_series(1, $1::integer) LIMIT $1"  // LIMIT: see below
        typealias Row = Int64
        let positions: Int32

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(positions)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    /// New rows, each unless the app has an active notification with its id; the rows
    /// inserted come back as (id, position).
    struct InsertFresh: PostgresPreparedStatement {
        static let sql = """
            INSERT INTO notifications (\(ColumnArrays.list)) SELECT * FROM \(ColumnArrays.unnest)
            ON CONFLICT (user_id, lower(host_name), app_notification_id) WHERE NOT deleted DO NOTHING RETURNING id, seq
            """
        typealias Row = (String, Int64)
        let rows: ColumnArrays

        func makeBindings() throws -> PostgresBindings { rows.bindings }
        func decodeRow(_ row: PostgresRow) throws -> (String, Int64) { try row.decode((String, Int64).self) }
    }

    /// Rows written whole: inserted, or replacing the row of the same id.
    struct Save: PostgresPreparedStatement {
        static let sql = """
            INSERT INTO notifications (\(ColumnArrays.list)) SELECT * FROM \(ColumnArrays.unnest)
            ON CONFLICT (id) DO UPDATE SET \(ColumnArrays.names.dropFirst().map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", "))
            """
        typealias Row = ()
        let rows: ColumnArrays

        func makeBindings() throws -> PostgresBindings { rows.bindings }
        func decodeRow(_ row: PostgresRow) throws {}
    }

    /// A batch of new notifications and nothing else, whole in one statement (so in one
    /// transaction of its own, one round trip): takes the feed locks of `users`, reserves a
    /// position a row, inserts each row at its position unless the app already has an active
    /// notification with its id (a re-publish, left to the caller), announces each user's new
    /// cursor (``PostgresStorage/announcements(_:from:)``'s payloads, made here) and answers the
    /// rows inserted as (id, user, position). A position drawn for a row not inserted is left
    /// unused: positions order a feed, and need not follow each other.
    struct PublishTogether: PostgresPreparedStatement {
        static let sql: String = {
            let columns = ColumnArrays.names.count
            let (users, count, channel, instance) = ("$\(columns + 1)", "$\(columns + 2)::integer", "$\(columns + 3)::text", "$\(columns + 4)::text")
            let values = ColumnArrays.names.map { $0 == "seq" ? "positions.seq" : "fresh.\($0)" }.joined(separator: ", ")
            return """
                WITH positions AS (
                    SELECT seq, row_number() OVER (ORDER BY seq) AS n FROM (
                        SELECT nextval('notty_seq') AS seq FROM generate_series(1, \(count)) WHERE (\(FeedLock.count(users))) >= 0 LIMIT \(count)
                    ) AS drawn
                ), inserted AS (
                    INSERT INTO notifications (\(ColumnArrays.list))
                    SELECT \(values) FROM \(ColumnArrays.unnest) WITH ORDINALITY AS fresh(\(ColumnArrays.list), n) JOIN positions USING (n) ORDER BY n
                    ON CONFLICT (user_id, lower(host_name), app_notification_id) WHERE NOT deleted DO NOTHING
                    RETURNING id, user_id, seq
                ), cursors AS (
                    SELECT user_id || ':' || max(seq) AS item FROM inserted GROUP BY user_id
                ), announced AS (
                    SELECT pg_notify(\(channel), \(instance) || '|' || string_agg(item, ';')) FROM (
                        SELECT item, sum(octet_length(item) + 1) OVER (ORDER BY item) / \(PostgresStorage.announcementBytes) AS chunk FROM cursors
                    ) AS chunked GROUP BY chunk
                )
                SELECT id, user_id, seq FROM inserted WHERE (SELECT count(*) FROM announced) >= 0
                """
        }()
        typealias Row = (String, String, Int64)
        let rows: ColumnArrays
        let users: [String]
        let channel: String
        let instance: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = rows.bindings
            bindings.append(users)
            bindings.append(Int32(rows.count))
            bindings.append(channel)
            bindings.append(instance)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> (String, String, Int64) { try row.decode((String, String, Int64).self) }
    }

    /// Tells the other instances what moved (``PostgresStorage/announcements(_:from:)``).
    struct Announce: PostgresPreparedStatement {
        static let sql = "SELECT pg_notify($1::text, payload) FROM unnest($2::text[]) AS payload"
        typealias Row = ()
        let channel: String
        let payloads: [String]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(channel)
            bindings.append(payloads)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }
}

/// A user's feed lock: a transaction-scoped advisory lock keyed by a hash of the user id,
/// held by every write of the user's feed (and by deleting the user) until it commits, so
/// that positions are drawn in commit order. Locks are taken in key order, so two writers
/// never deadlock; two users whose keys collide only wait for each other.
///
/// (It was a row lock on the user: that wrote the lock into the `users` row in every batch,
/// and its statement had to be planned at each call, the generic plan scanning the table.)
enum FeedLock {
    /// The keys' namespace (a seed of the hash), apart from other advisory locks.
    static let seed = 7_262_032

    /// A query that takes the locks of the user ids in the array `parameter` and counts them.
    static func count(_ parameter: String) -> String {
        """
        SELECT count(*) FROM (SELECT pg_advisory_xact_lock(key) FROM (SELECT DISTINCT hashtextextended(id, \(seed)) AS key \
        FROM unnest(\(parameter)::text[]) AS id) AS keys ORDER BY key) AS locked
        """
    }
}

/// Rows of `notifications` as one array a column, in ``NotificationColumns/names`` order, then
/// each row's `words` for search (``SearchVector``; with no rows, one empty array a column).
struct ColumnArrays: ColumnWriter, Sendable {
    /// The columns written, in order.
    static let names = NotificationColumns.names + ["words"]
    static let list = names.joined(separator: ", ")

    private var columns: [NullableArray]
    private var column = 0
    private(set) var count = 0

    /// The columns' element types, in order (read from a sample row once).
    private static let elements: [NullableArray.Element] = {
        var probe = ColumnArrays(columns: [])
        NotificationColumns.sample.write(to: &probe)
        probe.text("")  // words
        return probe.columns.map(\.element)
    }()

    /// `unnest($1::text[], $2::text[], …)`: the arrays' types, in column order (`words` a
    /// `tsvector` read from its text).
    static let unnest: String = {
        let casts = elements.enumerated().map { index, element in "$\(index + 1)::\(element.sqlType)" }
        return "unnest(\(casts.dropLast().joined(separator: ", ")), \(casts.last!)::tsvector[])"
    }()

    init() { self.init(columns: Self.elements.map { NullableArray(element: $0) }) }

    private init(columns: [NullableArray]) { self.columns = columns }

    init(_ rows: some Sequence<StoredNotification>) {
        self.init()
        for row in rows { append(NotificationColumns(row)) }
    }

    mutating func append(_ row: NotificationColumns) {
        column = 0
        row.write(to: &self)
        text(SearchVector.text(row))
        count += 1
    }

    var bindings: PostgresBindings {
        var bindings = PostgresBindings(capacity: columns.count)
        for array in columns { bindings.append(array) }
        return bindings
    }

    mutating func text(_ value: String?) { columns[next(.text)].append(text: value) }
    mutating func integer(_ value: Int64?) { columns[next(.int8)].append(integer: value) }
    mutating func flag(_ value: Bool) { columns[next(.bool)].append(flag: value) }

    /// The index of the next column's array (made here only while ``elements`` probes).
    private mutating func next(_ element: NullableArray.Element) -> Int {
        if column == columns.count { columns.append(NullableArray(element: element)) }
        column += 1
        return column - 1
    }
}

/// A one-dimensional array whose elements may be NULL, in PostgreSQL's binary array format
/// (PostgresNIO encodes arrays of values, not of optionals).
struct NullableArray: PostgresDynamicTypeEncodable, Sendable {
    enum Element: Sendable {
        case text, int8, bool

        var type: PostgresDataType {
            switch self {
            case .text: .text
            case .int8: .int8
            case .bool: .bool
            }
        }

        /// The array's type in SQL, for a cast.
        var sqlType: String {
            switch self {
            case .text: "text[]"
            case .int8: "bigint[]"
            case .bool: "boolean[]"
            }
        }

        var arrayType: PostgresDataType {
            switch self {
            case .text: .textArray
            case .int8: .int8Array
            case .bool: .boolArray
            }
        }
    }

    let element: Element
    private var count: Int32 = 0
    private var hasNull = false
    private var elements = ByteBuffer()

    init(element: Element) { self.element = element }

    mutating func append(text value: String?) {
        guard let value else { return appendNull() }
        count += 1
        let lengthAt = elements.writerIndex
        elements.writeInteger(Int32(0))
        elements.setInteger(Int32(elements.writeString(value)), at: lengthAt)
    }

    mutating func append(integer value: Int64?) {
        guard let value else { return appendNull() }
        count += 1
        elements.writeInteger(Int32(8))
        elements.writeInteger(value)
    }

    mutating func append(flag value: Bool) {
        count += 1
        elements.writeInteger(Int32(1))
        elements.writeInteger(UInt8(value ? 1 : 0))
    }

    private mutating func appendNull() {
        count += 1
        hasNull = true
        elements.writeInteger(Int32(-1))
    }

    var psqlType: PostgresDataType { element.arrayType }
    var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        guard count > 0 else {
            // PostgreSQL's empty array: no dimensions.
            buffer.writeInteger(Int32(0))
            buffer.writeInteger(Int32(0))
            buffer.writeInteger(element.type.rawValue)
            return
        }
        buffer.writeInteger(Int32(1))  // dimensions
        buffer.writeInteger(Int32(hasNull ? 1 : 0))
        buffer.writeInteger(element.type.rawValue)
        buffer.writeInteger(count)  // the dimension's length
        buffer.writeInteger(Int32(1))  // its lower bound
        buffer.writeImmutableBuffer(elements)
    }
}

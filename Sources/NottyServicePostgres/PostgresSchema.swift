import Foundation
import Logging
import NottyCore
import NottyService
import PostgresNIO
import Synchronization

/// The schema: migrations, applied once per database under an advisory lock.
extension PostgresStorage {
    // MARK: - Schema (migrations are never edited once shipped)

    /// Each migration is a list of statements (the extended protocol runs one at a time).
    static let migrations: [(name: String, statements: [String])] = [
        (
            "v1",
            [
                "CREATE SEQUENCE notty_seq",
                """
                CREATE TABLE users (
                    id TEXT PRIMARY KEY,
                    user_name TEXT NOT NULL,
                    display_name TEXT NOT NULL,
                    password_hash TEXT NOT NULL,
                    purged_through BIGINT NOT NULL DEFAULT 0
                )
                """,
                "CREATE UNIQUE INDEX users_name ON users (lower(user_name))",
                "CREATE TABLE apps (client_id TEXT PRIMARY KEY, host_name TEXT NOT NULL, secret_hash TEXT NOT NULL)",
                "CREATE UNIQUE INDEX apps_host ON apps (lower(host_name))",
                """
                CREATE TABLE tokens (
                    hash TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    expires BIGINT NOT NULL,
                    revoked BOOLEAN NOT NULL DEFAULT false
                )
                """,
                "CREATE INDEX tokens_subject ON tokens (subject)",
                "CREATE INDEX tokens_expires ON tokens (expires)",
                """
                CREATE TABLE subscriptions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    host_name TEXT,
                    device_id TEXT NOT NULL,
                    device_name TEXT,
                    platform TEXT,
                    created BIGINT NOT NULL,
                    expires BIGINT NOT NULL,
                    revoked BOOLEAN NOT NULL DEFAULT false
                )
                """,
                "CREATE INDEX subscriptions_user ON subscriptions (user_id)",
                """
                CREATE TABLE notifications (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    host_name TEXT NOT NULL,
                    app_notification_id TEXT NOT NULL,
                    group_name TEXT,
                    priority TEXT NOT NULL,
                    raw_content TEXT,
                    has_visual BOOLEAN NOT NULL,
                    title TEXT,
                    body TEXT,
                    display_ttl BIGINT,
                    expires BIGINT NOT NULL,
                    created BIGINT NOT NULL,
                    modified BIGINT NOT NULL,
                    deleted BOOLEAN NOT NULL DEFAULT false,
                    read_state TEXT NOT NULL,
                    read_at BIGINT NOT NULL,
                    action_state TEXT NOT NULL,
                    snoozed_until BIGINT,
                    action_at BIGINT NOT NULL,
                    target_policy TEXT,
                    fallback_policy TEXT,
                    seq BIGINT NOT NULL
                )
                """,
                "CREATE UNIQUE INDEX notifications_feed ON notifications (user_id, seq)",
                "CREATE UNIQUE INDEX notifications_app_id ON notifications (user_id, lower(host_name), app_notification_id) WHERE NOT deleted",
                "CREATE INDEX notifications_view ON notifications (user_id, created DESC, id DESC) WHERE NOT deleted",
                "CREATE INDEX notifications_expiry ON notifications (expires) WHERE NOT deleted",
                "CREATE INDEX notifications_tombstones ON notifications (modified) WHERE deleted",
                """
                CREATE TABLE mutations (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    mutation_id TEXT NOT NULL,
                    notification_id TEXT NOT NULL,
                    status INTEGER NOT NULL,
                    created BIGINT NOT NULL,
                    PRIMARY KEY (user_id, mutation_id)
                )
                """,
                "CREATE INDEX mutations_created ON mutations (created)",
            ]
        ),
        // Devices: the device a user token was issued to, and when each device was last seen.
        (
            "v2",
            [
                "ALTER TABLE tokens ADD COLUMN device_id TEXT",
                "CREATE INDEX tokens_device ON tokens (device_id) WHERE device_id IS NOT NULL",
                "ALTER TABLE subscriptions ADD COLUMN last_seen BIGINT",
            ]
        ),
        // Links (PROTOCOL.md §7.1).
        ("v3", ["ALTER TABLE notifications ADD COLUMN launch_url TEXT"]),
        // Webhooks (PROTOCOL.md §7.2): the URL token's hash and the optional secret.
        (
            "v4",
            [
                "ALTER TABLE subscriptions ADD COLUMN webhook_hash TEXT",
                "ALTER TABLE subscriptions ADD COLUMN webhook_secret TEXT",
                "CREATE UNIQUE INDEX subscriptions_webhook ON subscriptions (webhook_hash) WHERE webhook_hash IS NOT NULL",
            ]
        ),
        // A sparse view (Snoozed, Dismissed, Activated) of a user with many notifications reads
        // its own rows in order instead of every row of the user (docs/BENCHMARKS.md,
        // "PostgreSQL plans": Snoozed's first window 31 ms -> 0.12 ms at 100,900 rows).
        ("v5", ["CREATE INDEX notifications_state ON notifications (user_id, action_state, created DESC, id DESC) WHERE NOT deleted"]),
        // Failed sign-ins per user name, client id and client address (GuessLimiter).
        (
            "v6",
            [
                "CREATE TABLE guesses (key TEXT PRIMARY KEY, failures INT NOT NULL, window_start BIGINT NOT NULL, locked_until BIGINT, strikes INT NOT NULL)"
            ]
        ),
        // Publishes held until they are due (ntfy's X-Delay).
        (
            "v7",
            [
                """
                CREATE TABLE delayed (id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE, subscription_id TEXT NOT NULL,
                                      host_name TEXT NOT NULL, due_at BIGINT NOT NULL, body TEXT NOT NULL, created_at BIGINT NOT NULL,
                                      claimed_until BIGINT NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX delayed_due ON delayed (due_at)",
            ]
        ),
        // The user's preferences (PROTOCOL.md §9): one row per key, last writer wins, in the feed.
        (
            "v8",
            [
                """
                CREATE TABLE preferences (user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE, key TEXT NOT NULL, value TEXT NOT NULL,
                                          changed_at BIGINT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (user_id, key))
                """,
                "CREATE INDEX preferences_feed ON preferences (user_id, seq)",
            ]
        ),
        // Ids and keys compared byte by byte (the C collation), as SQLite compares them: every
        // index insert and lookup on them skips the locale's comparison (the database's default
        // collation, C.UTF-8 or en_US.UTF-8, applies to the rest). Indexes are rebuilt; tables are
        // not rewritten. (docs/BENCHMARKS.md, "Scale per core".)
        (
            "v9",
            [
                #"ALTER TABLE users ALTER COLUMN id TYPE text COLLATE "C""#,
                #"ALTER TABLE notifications ALTER COLUMN id TYPE text COLLATE "C", ALTER COLUMN user_id TYPE text COLLATE "C", "#
                    + #"ALTER COLUMN app_notification_id TYPE text COLLATE "C", ALTER COLUMN action_state TYPE text COLLATE "C""#,
                #"ALTER TABLE subscriptions ALTER COLUMN id TYPE text COLLATE "C", ALTER COLUMN user_id TYPE text COLLATE "C""#,
                #"ALTER TABLE mutations ALTER COLUMN user_id TYPE text COLLATE "C", ALTER COLUMN mutation_id TYPE text COLLATE "C""#,
                #"ALTER TABLE preferences ALTER COLUMN user_id TYPE text COLLATE "C", ALTER COLUMN key TYPE text COLLATE "C""#,
                #"ALTER TABLE delayed ALTER COLUMN id TYPE text COLLATE "C", ALTER COLUMN user_id TYPE text COLLATE "C""#,
                #"ALTER TABLE tokens ALTER COLUMN hash TYPE text COLLATE "C", ALTER COLUMN subject TYPE text COLLATE "C""#,
            ]
        ),
        // Escalation rules (PROTOCOL.md §11): the user's own, a name each.
        (
            "v10",
            [
                """
                CREATE TABLE escalation_rules (id TEXT COLLATE "C" PRIMARY KEY, user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                               name TEXT NOT NULL, after_seconds BIGINT NOT NULL, repeat_seconds BIGINT, targets TEXT NOT NULL,
                                               priority TEXT NOT NULL, app TEXT, group_name TEXT, created BIGINT NOT NULL, UNIQUE (user_id, name))
                """
            ]
        ),
        // Escalation's work (PROTOCOL.md §11): tracks, deliveries, what each target was sent, status.
        (
            "v11",
            [
                """
                CREATE TABLE escalation_cursors (user_id TEXT COLLATE "C" PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE, seq BIGINT NOT NULL)
                """,
                """
                CREATE TABLE escalation_tracks (notification_id TEXT COLLATE "C" NOT NULL,
                                                rule_id TEXT COLLATE "C" NOT NULL REFERENCES escalation_rules (id) ON DELETE CASCADE,
                                                user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                                since BIGINT NOT NULL, due_at BIGINT, sent INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (notification_id, rule_id))
                """,
                "CREATE INDEX escalation_tracks_due ON escalation_tracks (due_at) WHERE due_at IS NOT NULL",
                "CREATE INDEX escalation_tracks_rule ON escalation_tracks (rule_id)",
                """
                CREATE TABLE escalation_deliveries (id TEXT COLLATE "C" PRIMARY KEY, user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                                    notification_id TEXT COLLATE "C" NOT NULL, rule_id TEXT COLLATE "C" NOT NULL, rule_name TEXT NOT NULL,
                                                    target TEXT NOT NULL, event TEXT NOT NULL, payload TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                                                    first_at BIGINT NOT NULL, next_at BIGINT NOT NULL, lease_until BIGINT NOT NULL DEFAULT 0, last_error TEXT)
                """,
                "CREATE INDEX escalation_deliveries_next ON escalation_deliveries (next_at)",
                "CREATE INDEX escalation_deliveries_notification ON escalation_deliveries (notification_id, target)",
                "CREATE INDEX escalation_deliveries_user ON escalation_deliveries (user_id)",
                """
                CREATE TABLE escalation_sent (notification_id TEXT COLLATE "C" NOT NULL, target TEXT NOT NULL,
                                              user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                              rule_id TEXT COLLATE "C" NOT NULL, rule_name TEXT NOT NULL, last_event TEXT NOT NULL,
                                              PRIMARY KEY (notification_id, target))
                """,
                """
                CREATE TABLE escalation_status (rule_id TEXT COLLATE "C" NOT NULL REFERENCES escalation_rules (id) ON DELETE CASCADE, target TEXT NOT NULL,
                                                user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                                last_delivery BIGINT, last_error TEXT, last_error_at BIGINT, PRIMARY KEY (rule_id, target))
                """,
                "CREATE INDEX escalation_status_user ON escalation_status (user_id)",
                """
                CREATE TABLE escalation_log (notification_id TEXT COLLATE "C" NOT NULL, user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                             at BIGINT NOT NULL, target TEXT NOT NULL, rule_name TEXT NOT NULL, outcome TEXT NOT NULL, error TEXT)
                """,
                "CREATE INDEX escalation_log_notification ON escalation_log (notification_id, at)",
                "CREATE INDEX escalation_log_user ON escalation_log (user_id)",
            ]
        ),
        // Actions (PROTOCOL.md §12): each notification's actions, each action's latest run.
        (
            "v12",
            [
                "ALTER TABLE notifications ADD COLUMN actions TEXT",
                "ALTER TABLE subscriptions ADD COLUMN alertmanager_url TEXT",
                "ALTER TABLE subscriptions ADD COLUMN upstream_id TEXT",
                """
                CREATE TABLE action_runs (notification_id TEXT COLLATE "C" NOT NULL, idx INTEGER NOT NULL,
                                          user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE, published BIGINT NOT NULL,
                                          label TEXT NOT NULL, status TEXT NOT NULL, http_status INTEGER, error TEXT, device TEXT,
                                          at BIGINT NOT NULL, lease_until BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (notification_id, idx))
                """,
                "CREATE INDEX action_runs_user ON action_runs (user_id)",
            ]
        ),
        // Secrets at rest: which key the store's sealed secrets expect, and a rotation's new key.
        ("v13", ["CREATE TABLE secret_keys (name TEXT PRIMARY KEY, value TEXT NOT NULL)"]),
        // Teams (PROTOCOL.md §13.1): a name, and members who are each an owner or a member.
        (
            "v14",
            [
                #"CREATE TABLE teams (id TEXT COLLATE "C" PRIMARY KEY, name TEXT COLLATE "C" NOT NULL UNIQUE, created BIGINT NOT NULL)"#,
                """
                CREATE TABLE team_members (team_id TEXT COLLATE "C" NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
                                           user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                           role TEXT NOT NULL, since BIGINT NOT NULL, PRIMARY KEY (team_id, user_id))
                """,
                "CREATE INDEX team_members_user ON team_members (user_id)",
            ]
        ),
        // A team's notification says whose it is and who changed it last (PROTOCOL.md §13.1).
        ("v15", ["ALTER TABLE notifications ADD COLUMN team TEXT", "ALTER TABLE notifications ADD COLUMN changed_by TEXT"]),
        // On call (PROTOCOL.md §13.2): a team's schedule, each user's contacts, and whom a page reached.
        (
            "v16",
            [
                """
                CREATE TABLE oncall (team_id TEXT COLLATE "C" PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
                                     schedule TEXT NOT NULL, updated BIGINT NOT NULL)
                """,
                """
                CREATE TABLE contacts (id TEXT COLLATE "C" PRIMARY KEY,
                                       user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                       target TEXT NOT NULL, created BIGINT NOT NULL)
                """,
                "CREATE INDEX contacts_user ON contacts (user_id)",
                "ALTER TABLE escalation_log ADD COLUMN recipient TEXT",
            ]
        ),
        // Web Push (PROTOCOL.md §14): the service's VAPID key (one for every instance) and the browsers' subscriptions.
        (
            "v17",
            [
                "CREATE TABLE webpush_keys (name TEXT COLLATE \"C\" PRIMARY KEY, private_key TEXT NOT NULL, public_key TEXT NOT NULL)",
                """
                CREATE TABLE webpush_subscriptions (id TEXT COLLATE "C" PRIMARY KEY,
                                                    user_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                                    device_id TEXT, endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL,
                                                    position BIGINT NOT NULL, created BIGINT NOT NULL, retry_at BIGINT,
                                                    failures INTEGER NOT NULL DEFAULT 0, last_error TEXT, UNIQUE (user_id, endpoint))
                """,
                "CREATE INDEX webpush_subscriptions_retry ON webpush_subscriptions (retry_at)",
            ]
        ),
        // Accounts an administrator runs (PROTOCOL.md §15): disabled users, and when each was made.
        ("v18", ["ALTER TABLE users ADD COLUMN disabled BOOLEAN NOT NULL DEFAULT false", "ALTER TABLE users ADD COLUMN created BIGINT"]),
        // Heartbeats (PROTOCOL.md §16.3): one index over the due times of those that may go late.
        (
            "v19",
            [
                """
                CREATE TABLE heartbeats (id TEXT COLLATE "C" PRIMARY KEY,
                                         owner_id TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                                         name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, every INTEGER NOT NULL, grace INTEGER NOT NULL,
                                         priority TEXT NOT NULL, message TEXT, created_by TEXT NOT NULL, created BIGINT NOT NULL,
                                         last_ping BIGINT, failed BOOLEAN NOT NULL DEFAULT false, due BIGINT NOT NULL,
                                         paused BOOLEAN NOT NULL DEFAULT false, alerting BOOLEAN NOT NULL DEFAULT false, claimed_until BIGINT,
                                         UNIQUE (owner_id, name))
                """,
                "CREATE INDEX heartbeats_due ON heartbeats (due) WHERE NOT paused AND NOT alerting",
            ]
        ),
        // Search (PROTOCOL.md §17): each row's words under a GIN index (``searchMigration``).
        searchMigration,
        // Counts kept as data (``keptCountsMigration``): `GET …/counts` reads a few rows, not the user's.
        keptCountsMigration,
    ]

    /// Applies the migrations not yet applied, under an advisory lock so that instances
    /// starting together do not race (given a minute: the first connection, perhaps a busy server).
    public func migrate() async throws {
        // A database of a newer build: its unknown migrations, thrown after the transaction
        // (whose errors become "unavailable").
        let unknown: Set<String> = try await transaction(timeout: .seconds(60)) { connection in
            try await connection.exec("SELECT pg_advisory_xact_lock(7262031)", logger: self.logger)
            try await connection.exec(
                "CREATE TABLE IF NOT EXISTS notty_migrations (name TEXT PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now())",
                logger: self.logger)
            let names: [String] = try await connection.query("SELECT name FROM notty_migrations", logger: self.logger).collect(String.self)
            let applied = Set(names)
            let unknown = applied.subtracting(Self.migrations.map(\.name))
            guard unknown.isEmpty else { return unknown }
            let pending = Self.migrations.filter { !applied.contains($0.name) }
            if !pending.isEmpty {
                try await connection.exec(PostgresQuery(unsafeSQL: Self.script(pending)), logger: self.logger)
            }
            return []
        }
        if !unknown.isEmpty {
            throw NewerStoreError(place: "the PostgreSQL database \(url)", unknown: Array(unknown), newestKnown: Self.migrations.last?.name ?? "")
        }
    }

    /// `migrations`, each recorded as applied, as one statement (a PL/pgSQL block): one round
    /// trip rather than one a statement. (A fresh database's hundred-odd round trips, at the
    /// start of a full test run on 2 cores, each waiting its turn on a busy event loop, took
    /// over the minute `migrate()` gives them; the statements themselves take milliseconds.)
    static func script(_ migrations: [(name: String, statements: [String])]) -> String {
        func quoted(_ text: String) -> String {
            precondition(!text.contains("$notty_sql$"), "a migration may not contain the quote $notty_sql$")
            return "$notty_sql$\(text)$notty_sql$"
        }
        var body = ""
        for migration in migrations {
            for statement in migration.statements { body += "EXECUTE \(quoted(statement));\n" }
            body += "INSERT INTO notty_migrations (name) VALUES (\(quoted(migration.name)));\n"
        }
        return "DO $notty_migrations$\nBEGIN\n\(body)END\n$notty_migrations$"
    }
}

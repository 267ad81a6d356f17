import Foundation
import GRDB
import NottyCore
import NottyRecords
import NottyService

/// The service's SQLite schema: migrations are never edited once shipped; a change is a new
/// one at the end (PostgreSQL's twin is `PostgresSchema.swift`).
extension SQLiteStorage {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                    INSERT INTO meta (key, value) VALUES ('seq', 0);
                    CREATE TABLE users (
                        id TEXT PRIMARY KEY,
                        user_name TEXT NOT NULL UNIQUE COLLATE NOCASE,
                        display_name TEXT NOT NULL,
                        password_hash TEXT NOT NULL,
                        purged_through INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE apps (
                        client_id TEXT PRIMARY KEY,
                        host_name TEXT NOT NULL UNIQUE COLLATE NOCASE,
                        secret_hash TEXT NOT NULL
                    );
                    CREATE TABLE tokens (
                        hash TEXT PRIMARY KEY,
                        kind TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        expires INTEGER NOT NULL,
                        revoked INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX tokens_subject ON tokens (subject);
                    CREATE TABLE subscriptions (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        host_name TEXT COLLATE NOCASE,
                        device_id TEXT NOT NULL,
                        device_name TEXT,
                        platform TEXT,
                        created INTEGER NOT NULL,
                        expires INTEGER NOT NULL,
                        revoked INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX subscriptions_user ON subscriptions (user_id);
                    CREATE TABLE notifications (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        host_name TEXT NOT NULL COLLATE NOCASE,
                        app_notification_id TEXT NOT NULL,
                        group_name TEXT,
                        priority TEXT NOT NULL,
                        raw_content TEXT,
                        has_visual INTEGER NOT NULL,
                        title TEXT,
                        body TEXT,
                        display_ttl INTEGER,
                        expires INTEGER NOT NULL,
                        created INTEGER NOT NULL,
                        modified INTEGER NOT NULL,
                        deleted INTEGER NOT NULL DEFAULT 0,
                        read_state TEXT NOT NULL,
                        read_at INTEGER NOT NULL,
                        action_state TEXT NOT NULL,
                        snoozed_until INTEGER,
                        action_at INTEGER NOT NULL,
                        target_policy TEXT,
                        fallback_policy TEXT,
                        seq INTEGER NOT NULL
                    );
                    CREATE UNIQUE INDEX notifications_feed ON notifications (user_id, seq);
                    CREATE UNIQUE INDEX notifications_app_id ON notifications (user_id, host_name, app_notification_id) WHERE deleted = 0;
                    CREATE INDEX notifications_view ON notifications (user_id, created DESC, id DESC) WHERE deleted = 0;
                    CREATE INDEX notifications_expiry ON notifications (expires) WHERE deleted = 0;
                    CREATE INDEX notifications_tombstones ON notifications (modified) WHERE deleted = 1;
                    CREATE TABLE mutations (
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        mutation_id TEXT NOT NULL,
                        notification_id TEXT NOT NULL,
                        status INTEGER NOT NULL,
                        created INTEGER NOT NULL,
                        PRIMARY KEY (user_id, mutation_id)
                    );
                    CREATE INDEX mutations_created ON mutations (created);
                    """)
        }
        // v2: the id is no longer the table's primary key, whose index put every new random id
        // on a random page (a written page per publish). The ids' own index is keyed by the id
        // from its tenth character, then its first eight: the time in a notification id comes
        // first there (see `Identifiers.notification`). Ids made before this migration keep
        // working, as random keys. The table is rebuilt: SQLite cannot drop a primary key.
        // v2 rebuilds the notifications table (SQLite cannot drop a primary key), so it repeats
        // v1's columns on purpose: a shipped migration is never edited.
        migrator.registerMigration("v2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE notifications_v2 (
                        id TEXT NOT NULL,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        host_name TEXT NOT NULL COLLATE NOCASE,
                        app_notification_id TEXT NOT NULL,
                        group_name TEXT,
                        priority TEXT NOT NULL,
                        raw_content TEXT,
                        has_visual INTEGER NOT NULL,
                        title TEXT,
                        body TEXT,
                        display_ttl INTEGER,
                        expires INTEGER NOT NULL,
                        created INTEGER NOT NULL,
                        modified INTEGER NOT NULL,
                        deleted INTEGER NOT NULL DEFAULT 0,
                        read_state TEXT NOT NULL,
                        read_at INTEGER NOT NULL,
                        action_state TEXT NOT NULL,
                        snoozed_until INTEGER,
                        action_at INTEGER NOT NULL,
                        target_policy TEXT,
                        fallback_policy TEXT,
                        seq INTEGER NOT NULL
                    );
                    INSERT INTO notifications_v2 SELECT * FROM notifications ORDER BY rowid;
                    DROP TABLE notifications;
                    ALTER TABLE notifications_v2 RENAME TO notifications;
                    CREATE UNIQUE INDEX notifications_id ON notifications (substr(id, 10), substr(id, 1, 8));
                    CREATE UNIQUE INDEX notifications_feed ON notifications (user_id, seq);
                    CREATE UNIQUE INDEX notifications_app_id ON notifications (user_id, host_name, app_notification_id) WHERE deleted = 0;
                    CREATE INDEX notifications_view ON notifications (user_id, created DESC, id DESC) WHERE deleted = 0;
                    CREATE INDEX notifications_expiry ON notifications (expires) WHERE deleted = 0;
                    CREATE INDEX notifications_tombstones ON notifications (modified) WHERE deleted = 1;
                    """)
        }
        // Devices: the device a user token was issued to, and when each device was last seen.
        migrator.registerMigration("v3") { db in
            try db.execute(
                sql: """
                    ALTER TABLE tokens ADD COLUMN device_id TEXT;
                    CREATE INDEX tokens_device ON tokens (device_id) WHERE device_id IS NOT NULL;
                    ALTER TABLE subscriptions ADD COLUMN last_seen INTEGER;
                    """)
        }
        // Links (PROTOCOL.md §7.1).
        migrator.registerMigration("v4") { db in
            try db.execute(sql: "ALTER TABLE notifications ADD COLUMN launch_url TEXT")
        }
        // Webhooks (PROTOCOL.md §7.2): the URL token's hash and the optional secret.
        migrator.registerMigration("v5") { db in
            try db.execute(
                sql: """
                    ALTER TABLE subscriptions ADD COLUMN webhook_hash TEXT;
                    ALTER TABLE subscriptions ADD COLUMN webhook_secret TEXT;
                    CREATE UNIQUE INDEX subscriptions_webhook ON subscriptions (webhook_hash) WHERE webhook_hash IS NOT NULL;
                    """)
        }
        // Failed sign-ins per user name, client id and client address (GuessLimiter).
        migrator.registerMigration("v6 guesses") { db in
            try db.execute(
                sql: """
                    CREATE TABLE guesses (
                        key TEXT PRIMARY KEY,
                        failures INTEGER NOT NULL,
                        window_start INTEGER NOT NULL,
                        locked_until INTEGER,
                        strikes INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        // Publishes held until they are due (ntfy's X-Delay).
        migrator.registerMigration("v7 delayed") { db in
            try db.execute(
                sql: """
                    CREATE TABLE delayed (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        subscription_id TEXT NOT NULL,
                        host_name TEXT NOT NULL,
                        due_at INTEGER NOT NULL,
                        body TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        claimed_until INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX delayed_due ON delayed (due_at);
                    """)
        }
        // The user's preferences (PROTOCOL.md §9): one row per key, last writer wins, in the feed.
        migrator.registerMigration("v8 preferences") { db in
            try db.execute(
                sql: """
                    CREATE TABLE preferences (
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        key TEXT NOT NULL,
                        value TEXT NOT NULL,
                        changed_at INTEGER NOT NULL,
                        seq INTEGER NOT NULL,
                        PRIMARY KEY (user_id, key)
                    );
                    CREATE INDEX preferences_feed ON preferences (user_id, seq);
                    """)
        }
        // Escalation rules (PROTOCOL.md §11): the user's own, a name each.
        migrator.registerMigration("v9 escalation rules") { db in
            try db.execute(
                sql: """
                    CREATE TABLE escalation_rules (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        name TEXT NOT NULL,
                        after_seconds INTEGER NOT NULL,
                        repeat_seconds INTEGER,
                        targets TEXT NOT NULL,
                        priority TEXT NOT NULL,
                        app TEXT,
                        group_name TEXT,
                        created INTEGER NOT NULL,
                        UNIQUE (user_id, name)
                    );
                    """)
        }
        // Escalation's work (PROTOCOL.md §11): which rules watch which notifications, what is to be
        // sent, what each target was sent, each target's last delivery and error.
        migrator.registerMigration("v10 escalation work") { db in
            try db.execute(
                sql: """
                    CREATE TABLE escalation_cursors (
                        user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
                        seq INTEGER NOT NULL
                    );
                    CREATE TABLE escalation_tracks (
                        notification_id TEXT NOT NULL,
                        rule_id TEXT NOT NULL REFERENCES escalation_rules (id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        since INTEGER NOT NULL,
                        due_at INTEGER,
                        sent INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (notification_id, rule_id)
                    );
                    CREATE INDEX escalation_tracks_due ON escalation_tracks (due_at) WHERE due_at IS NOT NULL;
                    CREATE INDEX escalation_tracks_rule ON escalation_tracks (rule_id);
                    CREATE TABLE escalation_deliveries (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        notification_id TEXT NOT NULL,
                        rule_id TEXT NOT NULL,
                        rule_name TEXT NOT NULL,
                        target TEXT NOT NULL,
                        event TEXT NOT NULL,
                        payload TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        first_at INTEGER NOT NULL,
                        next_at INTEGER NOT NULL,
                        lease_until INTEGER NOT NULL DEFAULT 0,
                        last_error TEXT
                    );
                    CREATE INDEX escalation_deliveries_next ON escalation_deliveries (next_at);
                    CREATE INDEX escalation_deliveries_notification ON escalation_deliveries (notification_id, target);
                    CREATE INDEX escalation_deliveries_user ON escalation_deliveries (user_id);
                    CREATE TABLE escalation_sent (
                        notification_id TEXT NOT NULL,
                        target TEXT NOT NULL,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        rule_id TEXT NOT NULL,
                        rule_name TEXT NOT NULL,
                        last_event TEXT NOT NULL,
                        PRIMARY KEY (notification_id, target)
                    );
                    CREATE TABLE escalation_status (
                        rule_id TEXT NOT NULL REFERENCES escalation_rules (id) ON DELETE CASCADE,
                        target TEXT NOT NULL,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        last_delivery INTEGER,
                        last_error TEXT,
                        last_error_at INTEGER,
                        PRIMARY KEY (rule_id, target)
                    );
                    CREATE INDEX escalation_status_user ON escalation_status (user_id);
                    CREATE TABLE escalation_log (
                        notification_id TEXT NOT NULL,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        at INTEGER NOT NULL,
                        target TEXT NOT NULL,
                        rule_name TEXT NOT NULL,
                        outcome TEXT NOT NULL,
                        error TEXT
                    );
                    CREATE INDEX escalation_log_notification ON escalation_log (notification_id, at);
                    CREATE INDEX escalation_log_user ON escalation_log (user_id);
                    """)
        }
        // Actions (PROTOCOL.md §12): each notification's actions, and each action's latest run (of the
        // notification as published at `published`: a re-publish starts afresh).
        migrator.registerMigration("v11 actions") { db in
            try db.execute(
                sql: """
                    ALTER TABLE notifications ADD COLUMN actions TEXT;
                    ALTER TABLE subscriptions ADD COLUMN alertmanager_url TEXT;
                    ALTER TABLE subscriptions ADD COLUMN upstream_id TEXT;
                    CREATE TABLE action_runs (
                        notification_id TEXT NOT NULL,
                        idx INTEGER NOT NULL,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        published INTEGER NOT NULL,
                        label TEXT NOT NULL,
                        status TEXT NOT NULL,
                        http_status INTEGER,
                        error TEXT,
                        device TEXT,
                        at INTEGER NOT NULL,
                        lease_until INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (notification_id, idx)
                    );
                    CREATE INDEX action_runs_user ON action_runs (user_id);
                    """)
        }
        // Secrets at rest: which key the store's sealed secrets expect, and a rotation's new key.
        migrator.registerMigration("v12 secret keys") { db in
            try db.execute(sql: "CREATE TABLE secret_keys (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        }
        // Teams (PROTOCOL.md §13.1): a name, and members who are each an owner or a member.
        migrator.registerMigration("v13 teams") { db in
            try db.execute(
                sql: """
                    CREATE TABLE teams (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, created INTEGER NOT NULL);
                    CREATE TABLE team_members (
                        team_id TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        role TEXT NOT NULL,
                        since INTEGER NOT NULL,
                        PRIMARY KEY (team_id, user_id)
                    );
                    CREATE INDEX team_members_user ON team_members (user_id);
                    """)
        }
        // A team's notification says whose it is and who changed it last (PROTOCOL.md §13.1).
        migrator.registerMigration("v14 team notifications") { db in
            try db.execute(sql: "ALTER TABLE notifications ADD COLUMN team TEXT; ALTER TABLE notifications ADD COLUMN changed_by TEXT")
        }
        // On call (PROTOCOL.md §13.2): a team's schedule, each user's contacts, and whom a page reached.
        migrator.registerMigration("v15 on call") { db in
            try db.execute(
                sql: """
                    CREATE TABLE oncall (
                        team_id TEXT PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
                        schedule TEXT NOT NULL,
                        updated INTEGER NOT NULL
                    );
                    CREATE TABLE contacts (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        target TEXT NOT NULL,
                        created INTEGER NOT NULL
                    );
                    CREATE INDEX contacts_user ON contacts (user_id);
                    ALTER TABLE escalation_log ADD COLUMN recipient TEXT;
                    """)
        }
        // Web Push (PROTOCOL.md §14): the service's VAPID key and the browsers' subscriptions.
        migrator.registerMigration("v16 web push") { db in
            try db.execute(
                sql: """
                    CREATE TABLE webpush_keys (name TEXT PRIMARY KEY, private_key TEXT NOT NULL, public_key TEXT NOT NULL);
                    CREATE TABLE webpush_subscriptions (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                        device_id TEXT,
                        endpoint TEXT NOT NULL,
                        p256dh TEXT NOT NULL,
                        auth TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        created INTEGER NOT NULL,
                        retry_at INTEGER,
                        failures INTEGER NOT NULL DEFAULT 0,
                        last_error TEXT,
                        UNIQUE (user_id, endpoint)
                    );
                    CREATE INDEX webpush_subscriptions_retry ON webpush_subscriptions (retry_at);
                    """)
        }
        // Accounts an administrator runs (PROTOCOL.md §15): disabled users, and when each was made.
        migrator.registerMigration("v17 accounts") { db in
            try db.execute(
                sql: """
                    ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE users ADD COLUMN created INTEGER;
                    """)
        }
        // Heartbeats (PROTOCOL.md §16.3): one index over the due times of those that may go late.
        migrator.registerMigration("v18 heartbeats") { db in
            try db.execute(sql: SQLiteHeartbeatSchema.create)
        }
        // Search (PROTOCOL.md §17): the full-text index of the notifications (``SQLiteSearch``).
        migrator.registerMigration("v19 search") { db in
            try SQLiteSearch.migrate(db)
        }
        // Counts kept as data (``SQLiteCounts``): `GET …/counts` reads a few rows, not the user's.
        migrator.registerMigration("v20 kept counts") { db in
            try SQLiteCounts.migrate(db)
        }
        return migrator
    }
}

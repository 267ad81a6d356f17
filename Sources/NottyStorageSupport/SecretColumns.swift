import NottySecrets

extension SecretColumn {
    /// The table and column that hold it.
    public var place: (table: String, column: String) {
        switch self {
        case .notificationActions: ("notifications", "actions")
        case .ruleTargets: ("escalation_rules", "targets")
        case .deliveryTargets: ("escalation_deliveries", "target")
        case .sentTargets: ("escalation_sent", "target")
        case .statusTargets: ("escalation_status", "target")
        case .webhookSecrets: ("subscriptions", "webhook_secret")
        case .alertmanagerURLs: ("subscriptions", "alertmanager_url")
        case .contactTargets: ("contacts", "target")
        case .webPushKeys: ("webpush_keys", "private_key")
        case .webPushAuth: ("webpush_subscriptions", "auth")
        }
    }
}

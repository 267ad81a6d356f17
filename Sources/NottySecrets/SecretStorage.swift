import Foundation
import NottyCore

/// What the store keeps of the secret keys (`secret_keys`), and the sweep that seals stored
/// secrets anew (docs/GUIDE.md, "Secrets at rest").
public protocol SecretStorage: Sendable {
    /// A record of `secret_keys`: `check` (a value sealed under the key the store expects), or
    /// `key:ID` (a new key sealed under the one before it, while a rotation hands it over).
    func secretKeyRecord(_ name: String) async throws -> String?
    /// Sets (nil: removes) a record of `secret_keys`.
    func setSecretKeyRecord(_ name: String, value: String?) async throws
    /// Goes through up to `limit` stored secrets of `column` after `position` (nil: from the
    /// start) in the store's order, and writes each that `reseal` changes (unless it changed
    /// meanwhile). Answers the position reached (nil: the end) and how many were written.
    func resealSecrets(
        _ column: SecretColumn, after position: String?, limit: Int,
        _ reseal: @escaping @Sendable (String) -> String?
    ) async throws -> (position: String?, written: Int)
}

/// A stored column that holds secrets: the whole value is one (`.value`), or a list of actions
/// whose `http` actions carry one (`.actions`), or a JSON array of them (`.list`).
public enum SecretColumn: String, Sendable, CaseIterable {
    case notificationActions, ruleTargets, deliveryTargets, sentTargets, statusTargets, webhookSecrets, alertmanagerURLs, contactTargets, webPushKeys,
        webPushAuth
}

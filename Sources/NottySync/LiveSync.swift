import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import NottyCore
import NottyStore

/// What ``LiveSync`` reports.
public enum LiveSyncEvent: Sendable {
    case connection(ConnectionState)
    /// A sync finished (something may have changed in the store).
    case synced(SyncSummary)
    /// A sync failed; transient failures are retried with backoff, the others need the user.
    case failed(SyncError)
}

/// Keeps a device in sync until cancelled: the doorbell (WebSocket, reconnecting with jittered
/// exponential backoff 1 s → 60 s and pulling after every reconnect; full frames applied only
/// when contiguous) or conditional polling at the service's `X-Poll-Interval` (never more
/// often), backing off on errors; the outbox is flushed whenever the service answers.
public actor LiveSync {
    public enum Mode: Sendable, Equatable {
        /// The doorbell, with polling while it is down.
        case live
        /// Polling only, at least this many seconds apart.
        case polling(minimumInterval: Int)
    }

    let engine: SyncEngine
    let client: ServiceClient
    let mode: Mode
    let onEvent: @Sendable (LiveSyncEvent) -> Void
    private var kicks: AsyncStream<Void>.Continuation?
    private var state: ConnectionState = .connecting
    private var offlineSince: Date?
    private var serviceInterval = 30
    /// A sync that failed on this device's store is tried again after this many seconds.
    static let localRetry = 3.0
    private var retryScheduled = false

    private func retryLocal() {
        retryScheduled = false
        kicks?.yield()
    }

    public init(engine: SyncEngine, client: ServiceClient, mode: Mode, onEvent: @escaping @Sendable (LiveSyncEvent) -> Void) {
        self.engine = engine
        self.client = client
        self.mode = mode
        self.onEvent = onEvent
    }

    /// Asks for a sync as soon as possible (after a local action, or `R`).
    public func requestSync() {
        kicks?.yield()
    }

    /// Runs until the surrounding task is cancelled.
    public func run() async {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        kicks = continuation
        continuation.yield()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.syncWorker(stream) }
            group.addTask { await self.pollLoop() }
            if mode == .live { group.addTask { await self.doorbellLoop() } }
            await withTaskCancellationHandler {
                await group.waitForAll()
            } onCancel: {
                continuation.finish()
            }
        }
    }

    // MARK: - Sync on demand

    private func syncWorker(_ stream: AsyncStream<Void>) async {
        for await _ in stream {
            if Task.isCancelled { break }
            await syncNow()
        }
    }

    private func syncNow() async {
        await reporting {
            let summary = try await engine.sync()
            reachable()
            return summary
        }
    }

    /// Runs one step of syncing and reports it: synced, or what failed.
    private func reporting(_ step: () async throws -> SyncSummary) async {
        do {
            onEvent(.synced(try await step()))
        } catch let error as SyncError {
            failed(error)
        } catch let error as StoreError {
            failed(.local(error.description))
        } catch {
            failed(.unreachable(String(describing: error)))
        }
    }

    /// The service answered: no longer offline. Unless the doorbell is open (or, in live
    /// mode, still being opened), changes now arrive by polling.
    private func reachable() {
        offlineSince = nil
        if state == .live || (mode == .live && state == .connecting) { return }
        set(.polling(every: interval))
    }

    private func failed(_ error: SyncError) {
        if case .local = error {
            // The network is fine (the state stays as it is): try again in a few seconds,
            // until the store has room again.
            onEvent(.failed(error))
            guard !retryScheduled else { return }
            retryScheduled = true
            Task {
                try? await Task.sleep(for: .seconds(Self.localRetry))
                self.retryLocal()
            }
            return
        }
        if error.isTransient {
            let since = offlineSince ?? Date()
            offlineSince = since
            set(.offline(since: since))
        }
        onEvent(.failed(error))
    }

    private func set(_ newState: ConnectionState) {
        guard newState != state else { return }
        state = newState
        onEvent(.connection(newState))
    }

    private var interval: Int {
        if case .polling(let minimum) = mode { return max(minimum, serviceInterval) }
        return serviceInterval
    }

    // MARK: - Polling (and outbox retries)

    private func pollLoop() async {
        var backoff = PollBackoff()
        while !Task.isCancelled {
            var wait = interval
            if state != .live {
                do {
                    let (summary, pollInterval) = try await engine.pullIfChanged()
                    if let pollInterval, pollInterval > 0 { serviceInterval = pollInterval }
                    _ = try await engine.flush()
                    backoff.reset()
                    reachable()
                    onEvent(.synced(summary))
                    wait = interval
                } catch let error as SyncError {
                    failed(error)
                    wait = backoff.next(interval: interval)
                } catch let error as StoreError {
                    failed(.local(error.description))  // tried again by itself, shortly
                } catch {
                    failed(.unreachable(String(describing: error)))
                    wait = backoff.next(interval: interval)
                }
            } else if (try? await engine.store.perform({ try $0.outboxCount() })) ?? 0 > 0 {
                kicks?.yield()
            }
            // Polling waits the whole interval asked for (`--interval 300` means 5 minutes);
            // live, this loop only looks after the outbox, at least once a minute.
            try? await Task.sleep(for: .seconds(Double(state == .live ? min(wait, 60) : wait)))
        }
    }

    // MARK: - The doorbell

    private var doorbellBackoff = Backoff()

    private func doorbellLoop() async {
        let logger = Logger(label: "notty.doorbell")
        while !Task.isCancelled {
            do {
                // Also refreshes the access token when needed, and fails fast when offline.
                let me = try await client.send(.GET, "/v1/me")
                guard me.status == 200 else { throw SyncError.refused(status: me.status, code: me.errorText.code, message: me.errorText.message) }
                let credentials = await client.current
                var headers = HTTPFields()
                headers[.authorization] = "Bearer \(credentials.accessToken)"
                let url = Self.webSocketURL(credentials.server) + "/v1/me/push?payload=full"
                try await WebSocketClient.connect(
                    url: url, configuration: .init(maxFrameSize: 8 << 20, additionalHeaders: headers, autoPing: .enabled(timePeriod: .seconds(30))),
                    logger: logger
                ) { inbound, _, _ in
                    await self.connected()
                    for try await message in inbound.messages(maxSize: 8 << 20) {
                        guard case .text(let text) = message else { continue }
                        await self.ring(text)
                    }
                }
                disconnected(error: nil)
            } catch let error as SyncError {
                disconnected(error: error)
            } catch {
                disconnected(error: .unreachable("doorbell: \(ServiceClient.describe(error))"))
            }
            if Task.isCancelled { break }
            try? await Task.sleep(for: .seconds(Double(doorbellBackoff.next())))
        }
    }

    private func connected() {
        doorbellBackoff.reset()
        offlineSince = nil
        set(.live)
        kicks?.yield()  // always pull after (re)connecting: a missed frame loses nothing
    }

    private func disconnected(error: SyncError?) {
        if let error {
            failed(error)
        } else if state == .live {
            set(.polling(every: interval))
        }
    }

    private func ring(_ text: String) async {
        guard let frame = try? NottyJSON.decoder.decode(DoorbellFrame.self, from: Data(text.utf8)) else { return }
        await reporting {
            try await engine.receive(frame)
            return SyncSummary()
        }
    }

    static func webSocketURL(_ server: String) -> String {
        if server.hasPrefix("https://") { return "wss://" + server.dropFirst("https://".count) }
        if server.hasPrefix("http://") { return "ws://" + server.dropFirst("http://".count) }
        return server
    }
}

/// Polling after an error (PROTOCOL.md §7.4): at least the poll interval, doubling with each error
/// up to 5 minutes, with up to a quarter more of jitter (but never past 5 minutes).
public struct PollBackoff {
    private var attempt = 0

    public init() {}

    public mutating func reset() { attempt = 0 }

    /// Seconds to wait before the next poll, given the poll interval in force.
    public mutating func next(interval: Int) -> Int {
        let floor = max(1, interval)
        let base = max(floor, min(300, floor << min(attempt, 16)))
        attempt += 1
        return min(max(300, floor), base + Int.random(in: 0...(base / 4)))
    }
}

/// Jittered exponential backoff from 1 s to 60 s (the doorbell's reconnects, PROTOCOL.md §3).
struct Backoff {
    private var attempt = 0

    mutating func reset() { attempt = 0 }

    /// Seconds to wait before the next try.
    mutating func next() -> Int {
        let ceiling = min(60, 1 << min(attempt, 6))
        attempt += 1
        return max(1, Int.random(in: (ceiling / 2)...ceiling))
    }
}

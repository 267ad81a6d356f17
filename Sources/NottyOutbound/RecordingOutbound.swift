import Foundation
import NottyService
import Synchronization

/// ``OutboundHTTP`` for tests: every request is recorded, and answered by `answer` (a status,
/// or an ``OutboundError`` to throw) instead of going out. Given a `policy`, a user-aimed
/// request it refuses is thrown as ``HTTPClientOutbound`` throws it, and not recorded.
public final class RecordingOutbound: OutboundHTTP {
    public typealias Answer = @Sendable (OutboundRequest) -> Result<OutboundResponse, OutboundError>
    private let answer: Answer
    private let policy: OutboundPolicy?
    private let recorded = Mutex<[OutboundRequest]>([])

    /// Answers every request `200` with no body unless told otherwise.
    public init(policy: OutboundPolicy? = nil, answer: @escaping Answer = { _ in .success(OutboundResponse(status: 200)) }) {
        self.policy = policy
        self.answer = answer
    }

    public func refusalBeforeLookup(_ url: String) -> String? {
        policy?.refusalBeforeLookup(url)
    }

    public func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse {
        if let policy, request.aim == .user, case .failure(let refusal) = await policy.check(request.url) {
            throw refusal.error
        }
        recorded.withLock { $0.append(request) }
        return try answer(request).get()
    }

    /// What was sent, in order.
    public var requests: [OutboundRequest] { recorded.withLock { $0 } }
}

import Foundation
import NottyService
import Synchronization

/// ``OutboundHTTP`` for tests: every request is recorded, and answered by `answer` (a status,
/// or an ``OutboundError`` to throw) instead of going out.
public final class RecordingOutbound: OutboundHTTP {
    public typealias Answer = @Sendable (OutboundRequest) -> Result<OutboundResponse, OutboundError>
    private let answer: Answer
    private let recorded = Mutex<[OutboundRequest]>([])

    /// Answers every request `200` with no body unless told otherwise.
    public init(answer: @escaping Answer = { _ in .success(OutboundResponse(status: 200)) }) {
        self.answer = answer
    }

    public func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse {
        recorded.withLock { $0.append(request) }
        return try answer(request).get()
    }

    /// What was sent, in order.
    public var requests: [OutboundRequest] { recorded.withLock { $0 } }
}

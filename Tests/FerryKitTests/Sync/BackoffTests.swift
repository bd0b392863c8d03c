import Testing
@testable import FerryKit
import FerryTestSupport

@Suite("Backoff")
struct BackoffTests {
    let backoff = Backoff()

    @Test func doublesWithEachFailureWithinItsJitterBand() {
        for failures in 1...8 {
            let low = backoff.delay(afterFailures: failures, error: nil, unit: 0)
            let high = backoff.delay(afterFailures: failures, error: nil, unit: 0.999_999)
            let raw = Duration.seconds(5) * (1 << (failures - 1))
            #expect(low == raw / 2)
            #expect(high <= raw && high > raw * 0.99)
        }
    }

    @Test func aLockedWebDAVResourceIsRetriedSoon_notAPermanentFailure() {
        #expect(SyncError(.httpStatus(423), store: "s", message: "locked").isRetryable)
        #expect(!SyncError(.httpStatus(400), store: "s", message: "bad").isRetryable)
    }

    @Test func isCapped() {
        #expect(backoff.delay(afterFailures: 60, error: nil, unit: 0.999) <= .seconds(3600))
    }

    @Test func honoursRetryAfterButNotBeyondTheCap() {
        let limited = SyncError(.rateLimited, store: "s", message: "429", retryAfter: .seconds(120))
        #expect(backoff.delay(afterFailures: 1, error: limited, unit: 0) == .seconds(120))
        let absurd = SyncError(.rateLimited, store: "s", message: "429", retryAfter: .seconds(86_400 * 30))
        #expect(backoff.delay(afterFailures: 1, error: absurd, unit: 0) == .seconds(3600))
    }

    @Test func permanentFailuresWaitLong() {
        let unauthorized = SyncError(.unauthorized, store: "s", message: "bad key")
        #expect(backoff.delay(afterFailures: 1, error: unauthorized, unit: 0) == .seconds(900))
    }

    @Test func queuePriorityOrdersOnDemandAboveScheduledAboveBackfill() {
        let onDemand = SyncPassOperation.queuePriority(trigger: .onDemand, store: .low)
        let scheduled = SyncPassOperation.queuePriority(trigger: .scheduled, store: .high)
        let backfill = SyncPassOperation.queuePriority(trigger: .backfill, store: .high)
        #expect(onDemand.rawValue > scheduled.rawValue)
        #expect(scheduled.rawValue > backfill.rawValue)
    }
}

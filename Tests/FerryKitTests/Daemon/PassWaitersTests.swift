import Testing
@testable import FerryKit

/// Who a pass's end answers: a request made while a pass ran waits for the one after it.
@Suite("Pass waiters")
struct PassWaitersTests {
    @Test func aRequestWaitsForAPassThatBeganAfterIt() {
        var waiters = PassWaiters<String>()
        waiters.add("asked while idle", for: "a", skip: 0)
        waiters.add("asked while running", for: "a", skip: 1)
        waiters.add("other store", for: "b", skip: 0)
        #expect(waiters.count == 3)
        #expect(waiters.passEnded("a") == ["asked while idle"])
        #expect(waiters.passEnded("a") == ["asked while running"])
        #expect(waiters.passEnded("a") == [])
        #expect(waiters.count == 1)
        #expect(waiters.stores == ["b"])
    }

    @Test func aRemovedStoreOrAStopEndsTheWait() {
        var waiters = PassWaiters<Int>()
        waiters.add(1, for: "a", skip: 0)
        waiters.add(2, for: "b", skip: 1)
        waiters.add(3, for: "b", skip: 0)
        #expect(waiters.removeAll(of: "a") == [1])
        #expect(Set(waiters.removeAll()) == [2, 3])
        #expect(waiters.count == 0)
    }

    @Test func theAnswerCarriesTheExitCodeFerrySyncWouldGive() {
        var report = PassReport(store: "a", pass: 1, trigger: .onDemand)
        report.counts.inserted = 2
        let ok = PassAnswer.answer(.success(report))
        #expect(ok.status == 200)
        #expect(ok.extraHeaders[PassAnswer.exitCodeHeader] == "0")
        let failed = PassAnswer.answer(.failure(SyncError(.httpStatus(503), store: "a", message: "down")))
        #expect(failed.status == 502)
        #expect(failed.extraHeaders[PassAnswer.exitCodeHeader] == String(FerryExitCode.unavailable.rawValue))
    }
}

/// Who waits for which pass of a store (`ferry sync --now`), as a small state machine the
/// daemon's thread keeps: a request made while a pass runs waits for the pass after it (the
/// running one may have read the remote before whatever the person wants to see), one made
/// while the store is idle or only due waits for the next pass to end.
struct PassWaiters<Waiter> {
    private var waiting: [String: [(waiter: Waiter, skip: Int)]] = [:]
    private(set) var count = 0

    /// The stores someone waits for.
    var stores: [String] { Array(waiting.keys) }

    /// `skip`: how many ends of `store`'s passes go by first (1 when a pass was running).
    mutating func add(_ waiter: Waiter, for store: String, skip: Int) {
        waiting[store, default: []].append((waiter, skip))
        count += 1
    }

    /// A pass of `store` ended: the waiters it answers, in the order they came.
    mutating func passEnded(_ store: String) -> [Waiter] {
        guard let list = waiting[store] else { return [] }
        var answered: [Waiter] = []
        var still: [(waiter: Waiter, skip: Int)] = []
        for entry in list {
            if entry.skip > 0 { still.append((entry.waiter, entry.skip - 1)) } else { answered.append(entry.waiter) }
        }
        waiting[store] = still.isEmpty ? nil : still
        count -= answered.count
        return answered
    }

    /// Every waiter of `store` (it left the configuration), or of every store (`nil`: ferryd stops).
    mutating func removeAll(of store: String? = nil) -> [Waiter] {
        let removed: [Waiter]
        if let store {
            removed = (waiting.removeValue(forKey: store) ?? []).map(\.waiter)
        } else {
            removed = waiting.values.flatMap { $0.map(\.waiter) }
            waiting = [:]
        }
        count -= removed.count
        return removed
    }
}

/// The control socket's answers, as the CLI reads them: a status, one line, and the exit
/// code `ferry sync` would have given for the same pass (`Ferry-Exit-Code`).
public enum PassAnswer {
    public static let exitCodeHeader = "Ferry-Exit-Code"

    /// The answer to a pass that ended.
    public static func answer(_ outcome: Result<PassReport, SyncError>) -> ListenerAnswer {
        let code = SyncOutcome.exitCode([outcome])
        let headers = [exitCodeHeader: String(code.rawValue)]
        switch outcome {
        case .success(let report): return ListenerAnswer(200, report.summary + "\n", extraHeaders: headers)
        case .failure(let error): return ListenerAnswer(502, "\(error)\n", extraHeaders: headers)
        }
    }

    /// An answer without a pass (no such store, too many waiting, stopping).
    public static func refusal(_ status: Int, _ message: String, code: FerryExitCode) -> ListenerAnswer {
        ListenerAnswer(status, message + "\n", extraHeaders: [exitCodeHeader: String(code.rawValue)])
    }

    /// Where ferryd takes pass requests: `control.sock` in its runtime directory, readable and
    /// writable by ferryd's user only (root may use it too).
    public static func socketPath(runtimeDirectory: String) -> String {
        (runtimeDirectory.hasSuffix("/") ? runtimeDirectory : runtimeDirectory + "/") + "control.sock"
    }
}

/// The one line ferryd gives systemd as STATUS=, which `systemctl status` shows: a replica
/// that cannot be written first; then each store and how it is (ok, FAILING with why, never
/// synced, syncing its first pass), or past ``Scheduler/Snapshot/listedStores`` stores how
/// many are in each state; running passes; the last pass; records; a refused reload; metrics
/// that are configured but not served.
struct StatusLine: Equatable {
    var databasePath: String
    /// The first problem of the last refused reload, kept until a reload succeeds.
    var reloadProblem: String?
    /// Why metrics are not served although configured, kept until they are.
    var metricsProblem: String?

    /// How many stores of a kind the summary names before it says "...".
    static let namedPerState = 8

    func render(_ snapshot: Scheduler.Snapshot, now: ContinuousClock.Instant = .now) -> String {
        let failing = Set(snapshot.failing)
        let never = Set(snapshot.neverSynced)
        var parts: [String]
        if snapshot.stores == 0 {
            parts = ["no stores"]
        } else if !snapshot.names.isEmpty {
            parts = [snapshot.names.map { state(of: $0, in: snapshot) }.joined(separator: ", ")]
        } else {
            let incomplete = snapshot.incomplete.keys.sorted()
            let count = Self.namedPerState
            var summary = "\(snapshot.stores) stores: \(snapshot.stores - failing.count - never.count - incomplete.count) ok"
            if !failing.isEmpty {
                let named = snapshot.failing.prefix(count).map { state(of: $0, in: snapshot) }
                summary += ", \(failing.count) FAILING (\(named.joined(separator: ", "))\(failing.count > count ? ", ..." : ""))"
            }
            if !incomplete.isEmpty {
                summary += ", \(incomplete.count) INCOMPLETE (\(incomplete.prefix(count).joined(separator: ", "))\(incomplete.count > count ? ", ..." : ""))"
            }
            if !never.isEmpty { summary += ", \(never.count) not synced yet" }
            parts = [summary]
        }
        if let problem = snapshot.replicaProblem { parts.insert("\(problem.uppercased()) (\(databasePath))", at: 0) }
        if !snapshot.running.isEmpty {
            let more = snapshot.running.count - Self.namedPerState
            parts.append("syncing \(snapshot.running.prefix(Self.namedPerState).joined(separator: ", "))" + (more > 0 ? " and \(more) more" : ""))
        }
        if let last = snapshot.lastPassFinished {
            parts.append("last pass \(Int((now - last).seconds)) s ago")
        }
        parts.append("\(snapshot.records) records")
        if let reloadProblem { parts.append("reload failed: \(reloadProblem)") }
        if let metricsProblem { parts.append("METRICS NOT SERVED: \(metricsProblem)") }
        return parts.joined(separator: "; ")
    }

    private func state(of name: String, in snapshot: Scheduler.Snapshot) -> String {
        if snapshot.failing.contains(name) { return "\(name) FAILING" + (snapshot.causes[name].map { " (\($0))" } ?? "") }
        if snapshot.neverSynced.contains(name) {
            return snapshot.running.contains(name) ? "\(name) first sync running" : "\(name) never synced"
        }
        if let gaps = snapshot.incomplete[name] { return "\(name) INCOMPLETE (\(gaps.shortened(to: 80)))" }
        return "\(name) ok"
    }
}

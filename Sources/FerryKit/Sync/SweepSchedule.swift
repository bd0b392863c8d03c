import Foundation

/// When a pass that may sweep deleted ids really does: by the replica's own record of its last
/// sweep, so the answer is the same for ferryd after a restart and for `ferry sync`.
///
/// A sweep lists every id of the remote and marks each in the replica, about the cost of a
/// first sync; asked for on every `ferry sync` or every first pass after a start, it made a
/// pass without changes cost as much as a full one.
///
/// | asked | interval | last sweep | sweeps |
/// |---|---|---|---|
/// | no | any | any | no |
/// | yes | none (now) | any | yes |
/// | yes | `d` | never | yes |
/// | yes | `d` | at least `d` ago | yes |
/// | yes | `d` | less than `d` ago | no |
/// | yes | `d` | in the future (the clock was set back) | yes |
public enum SweepSchedule {
    public static func sweeps(asked: Bool, every interval: Duration?, lastSwept: Date?, now: Date) -> Bool {
        guard asked else { return false }
        guard let interval, let lastSwept else { return true }
        let elapsed = now.timeIntervalSince(lastSwept)
        return elapsed < 0 || elapsed >= interval.seconds
    }
}

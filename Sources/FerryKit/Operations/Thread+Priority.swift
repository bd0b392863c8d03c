import Foundation

extension Thread {
    /// The nice value of work that may take what passes leave of the CPU.
    static let backgroundNice: Int32 = 10

    /// Lowers the calling thread's CPU priority to ``backgroundNice`` (Linux schedules threads
    /// one by one, so the rest of the process keeps its own). Call on the thread itself.
    ///
    /// For work beside the passes that no pass waits for, such as a large replica's integrity
    /// check: it read every page at full speed on one of two cores while a `ferry sync` pass
    /// ran, and took a quarter of that pass's time from it. Best effort: a refusal leaves the
    /// thread as it was.
    func lowerPriorityToBackground() {
        precondition(self == Thread.current, "lowerPriorityToBackground must run on the thread it lowers")
        guard let tid = Self.currentKernelID else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid, Self.backgroundNice)
    }

    /// The kernel's id of the calling thread, without gettid(2), which Glibc does not export
    /// to Swift: the /proc/thread-self link names it ("PID/task/TID"). Nil without /proc.
    static var currentKernelID: id_t? {
        guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") else { return nil }
        return link.split(separator: "/").last.flatMap { id_t($0) }
    }
}

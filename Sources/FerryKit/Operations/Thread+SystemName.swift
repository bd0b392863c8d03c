import Foundation

extension Thread {
    /// Starts a thread that carries `name` for Foundation and for the kernel, running `body`.
    @discardableResult
    static func start(named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) -> Thread {
        let thread = Thread {
            Thread.current.setSystemName(name)
            body()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
        return thread
    }

    /// Names the calling thread for the kernel, so `ps -L`, `top -H`, `perf` and core dumps show
    /// it. Call on the thread itself.
    ///
    /// swift-corelibs-foundation keeps `Thread.name` to itself when set before `start()`, and a
    /// new thread inherits its creator's kernel name: every Ferry thread showed as libdispatch's
    /// `com.apple.root.default-qos`. The kernel keeps 15 bytes; longer names are cut at a
    /// character boundary.
    func setSystemName(_ name: String) {
        precondition(self == Thread.current, "setSystemName must run on the thread it names")
        var bytes = 0
        let cut = name.prefix { character in
            bytes += character.utf8.count
            return bytes <= 15
        }
        // Writing /proc/thread-self/comm is prctl(PR_SET_NAME) without a variadic C call.
        // Best effort: without /proc the thread keeps its inherited name, nothing else changes.
        try? String(cut).write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
        self.name = name
    }
}

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

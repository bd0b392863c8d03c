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

import Foundation

/// What the kernel says of a running process, as far as `ferry reload` needs it to tell ferryd
/// from whatever process now has a pid a stale file or a mistyped `--pid` names.
///
/// Read from `/proc/PID/stat`, which any user may read for a process it can see: the command
/// name (`comm`, the executable's file name cut to 15 bytes) and the start time in clock ticks
/// since boot, which a reused pid never repeats. Under `ProtectProc=invisible` another user's
/// process has no `/proc` entry at all (nil), which is not taken as "gone": `kill(pid, 0)` says
/// whether it is.
public struct ProcessFacts: Sendable, Equatable {
    /// The command name (`comm`).
    public var name: String
    /// When the process started, in clock ticks since boot (`stat` field 22).
    public var startTicks: UInt64

    public init(name: String, startTicks: UInt64) {
        self.name = name
        self.startTicks = startTicks
    }

    /// The process `pid` as `/proc` shows it, nil when it shows none.
    public static func read(pid: Int32, proc: String = "/proc") -> ProcessFacts? {
        guard pid > 0, let data = FileManager.default.contents(atPath: "\(proc)/\(pid)/stat") else { return nil }
        return parse(stat: String(decoding: data, as: UTF8.self))
    }

    /// This process.
    public static var current: ProcessFacts? { read(pid: getpid()) }

    /// Parses a `/proc/PID/stat` line: `PID (COMM) STATE PPID ...`, where COMM may itself hold
    /// spaces and parentheses, so it runs from the first `(` to the last `)`.
    static func parse(stat line: String) -> ProcessFacts? {
        guard let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")"), open < close else { return nil }
        let name = String(line[line.index(after: open)..<close])
        // After the name: field 3 (state) onwards; the start time is field 22.
        let fields = line[line.index(after: close)...].split(separator: " ")
        guard fields.count >= 20, let start = UInt64(fields[19]) else { return nil }
        return ProcessFacts(name: name, startTicks: start)
    }
}

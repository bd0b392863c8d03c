import Foundation

/// A process as another process can recognise it later: its pid, and when it started (the
/// boot's id and the start time in `/proc/PID/stat`), so a pid the kernel handed to a new
/// process after the first one died is not taken for it.
struct ProcessIdentity: Sendable, Equatable {
    let pid: Int32
    /// `BOOT_ID:STARTTIME`; equal only for the same process of the same boot.
    let start: String

    /// This process.
    static let current: ProcessIdentity = {
        let pid = getpid()
        return ProcessIdentity(pid: pid, start: start(of: pid) ?? "unknown:\(pid)")
    }()

    /// The start of process `pid` as ``start`` writes it; nil when there is no such process.
    static func start(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        // The command name (field 2) is in parentheses and may hold spaces and parentheses:
        // fields are counted from the last ")". starttime is field 22.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After ")": field 3 (state) is fields[0], so field 22 is fields[19].
        guard fields.count > 19 else { return nil }
        return "\(bootID):\(fields[19])"
    }

    private static let bootID: String = {
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "no-boot-id"
    }()

    /// Whether this process still runs.
    var isRunning: Bool { Self.start(of: pid) == start }

    /// How people know this process: the program and its subcommand (`ferryd`, `ferry sync`).
    static let command: String = {
        let arguments = CommandLine.arguments
        let program = (arguments.first as NSString?)?.lastPathComponent ?? "ferry"
        if let subcommand = arguments.dropFirst().first, !subcommand.hasPrefix("-"), program == "ferry" {
            return "\(program) \(subcommand)"
        }
        return program
    }()
}

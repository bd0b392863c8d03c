import Foundation

/// How this process names itself in a claim on a store's pass (`ferry_pass_claims`). Whether a
/// claim stands is the lock file's to say (``PassLockFile``); these are for people, and for
/// Ferry 0.3, which took a claim for a dead process's unless `/proc` showed its pid with this
/// start.
enum ProcessIdentity {
    /// `BOOT_ID:STARTTIME` of this process, from its own `/proc` entries, which every sandbox
    /// leaves it (`no-boot-id` where the boot id is hidden).
    static let start: String = {
        let pid = getpid()
        let bootID = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "no-boot-id"
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return "\(bootID):unknown-\(pid)" }
        // The command name (field 2) is in parentheses and may hold spaces and parentheses:
        // fields are counted from the last ")". starttime is field 22, fields[19] after ")".
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? "\(bootID):\(fields[19])" : "\(bootID):unknown-\(pid)"
    }()

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

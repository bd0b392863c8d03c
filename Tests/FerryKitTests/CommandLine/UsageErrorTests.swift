import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A usage error is what every other error of `ferry` is: one line on stderr, `ferry: ...`,
/// and its documented exit code (64), nothing on stdout.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: FerrydProcessTests.binary("ferry")), "build ferry first: swift build"))
struct UsageErrorTests {
    static func run(_ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, out: String, err: String) {
        let outcome = try Shell.outcome(FerrydProcessTests.binary("ferry"), arguments, environment: environment)
        return (outcome.status, outcome.output, outcome.errors)
    }

    @Test(arguments: [["sync", "--bogus"], ["nosuch"], ["reload", "extra", "args"], ["synx", "--config", "f"], ["changes", "--limit", "many"], ["changes", "--since", "-5"]])
    func aUsageErrorIsOneLineAndExit64(_ arguments: [String]) throws {
        let result = try Self.run(arguments)
        #expect(result.status == 64)
        #expect(result.out.isEmpty)
        let lines = result.err.split(separator: "\n")
        #expect(lines.count == 1, "\(result.err)")
        #expect(lines.first?.hasPrefix("ferry: ") == true)
        #expect(lines.first?.hasSuffix("(see ferry --help)") == true)
    }

    /// A mistyped command is named with the nearest one, whatever follows it (`ferry synx
    /// --config f` said "Unknown option '--config'").
    @Test func aMistypedCommandGetsDidYouMean() throws {
        let result = try Self.run(["synx", "--config", "f"])
        #expect(result.status == 64 && result.err.contains("did you mean sync?"), "\(result.err)")
        let names = ["sync", "push", "status", "check-config"]
        #expect(SubcommandTypo.message(arguments: ["stauts"], subcommands: names)?.contains("did you mean status?") == true)
        #expect(SubcommandTypo.message(arguments: ["zzzzzz"], subcommands: names)?.contains("commands: sync, push") == true)
        #expect(SubcommandTypo.message(arguments: ["status", "x"], subcommands: names) == nil)
        #expect(SubcommandTypo.message(arguments: ["--version"], subcommands: names) == nil)
        #expect(SubcommandTypo.message(arguments: [], subcommands: names) == nil)
    }

    @Test func helpAndVersionStillExit0() throws {
        #expect(try Self.run(["--version"]).status == 0)
        let help = try Self.run(["sync", "--help"])
        #expect(help.status == 0 && help.out.contains("USAGE:"))
    }

    /// Root running a configuration other than the service's that names no database would
    /// write the service's replica: refused, with the two ways out.
    @Test(.enabled(if: getuid() == 0, "needs root: root's default database is the service's"))
    func rootWithAnotherFileAndNoDatabaseIsRefused() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("test.conf")
        try "[store demo]\nkind = json\nurl = https://api.example.com/items\n".write(toFile: file, atomically: true, encoding: .utf8)
        let refusal = "ferry: \(file) sets no database, so as root it would write the service's replica /var/lib/ferry/ferry.db; set database = in its [ferry] section, or pass --database PATH\n"
        // Every command that writes the replica, and the file named either way.
        for arguments in [["sync", "-c", file], ["push", "-c", file], ["resync", "demo", "-c", file], ["auth", "demo", "-c", file],
                          ["conflicts", "resolve", "1", "--keep", "local", "-c", file]] {
            let result = try Self.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.err)")
            #expect(result.err == refusal, "\(arguments)")
        }
        let named = try Self.run(["sync"], environment: ["FERRY_CONFIG": file])
        #expect(named.status == 64 && named.err == refusal, "FERRY_CONFIG: \(named.err)")
    }

    /// The rule itself, for any user: only root, only another file, only without a database.
    @Test func theServiceReplicaGuardRefusesOnlyRootWritingTheServicesReplicaFromAnotherFile() {
        let service = "/etc/ferry/ferry.conf"
        var global = GlobalConfiguration(databasePath: "/var/lib/ferry/ferry.db", runtimeDirectory: "/run/ferry")
        #expect(ServiceReplicaGuard.refusal(file: "/tmp/t.conf", serviceFile: service, global: global, databaseOption: nil, effectiveUser: 0) != nil)
        #expect(ServiceReplicaGuard.refusal(file: "/etc/ferry/../ferry/ferry.conf", serviceFile: service, global: global, databaseOption: nil, effectiveUser: 0) == nil)
        #expect(ServiceReplicaGuard.refusal(file: "/tmp/t.conf", serviceFile: service, global: global, databaseOption: "/tmp/t.db", effectiveUser: 0) == nil)
        #expect(ServiceReplicaGuard.refusal(file: "/tmp/t.conf", serviceFile: service, global: global, databaseOption: nil, effectiveUser: 1000) == nil)
        global.databaseIsDefault = false
        #expect(ServiceReplicaGuard.refusal(file: "/tmp/t.conf", serviceFile: service, global: global, databaseOption: nil, effectiveUser: 0) == nil)
    }

    @Test func statusHelpListsEveryState() throws {
        let help = try Self.run(["status", "--help"]).out
        for state in ["ok", "incomplete", "failing", "never-synced", "not-configured", "gone"] {
            #expect(help.contains(state), "ferry status --help lacks \(state)")
        }
    }

    /// The bash completion script, sourced in bash and run as bash runs it: store names from
    /// the configuration the line names (filtered by what is typed), a subcommand's options.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/bin/bash")))
    func bashCompletesStoreNamesAndOptions() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("ferry.conf")
        try "[ferry]\ndatabase = \(directory.path("c.db"))\n[store alpha]\nkind = json\nurl = https://a.example.com/x\n[store beta]\nkind = json\nurl = https://a.example.com/y\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: directory.path("c.db"), contents: Data())
        _ = FileManager.default.createFile(atPath: directory.path("notes.txt"), contents: Data())
        let bin = (FerrydProcessTests.binary("ferry") as NSString).deletingLastPathComponent
        let script = """
            source <(ferry --generate-completion-script bash)
            complete() { COMPREPLY=(); COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
                         _ferry ferry "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"; echo "${COMPREPLY[*]}"; }
            complete ferry sync -c \(file) ""
            complete ferry sync -c \(file) al
            complete ferry status --js
            complete ferry sync -c \(directory.path("fer"))
            complete ferry status --database \(directory.path(""))/
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ["PATH": bin + ":/usr/bin:/bin"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let lines = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").map(String.init)
        process.waitUntilExit()
        #expect(lines.count == 5, "\(lines)")
        #expect(lines.first.map { Set($0.split(separator: " ")) } == ["alpha", "beta"])
        #expect(lines.dropFirst().first == "alpha")
        #expect(lines.dropFirst(2).first == "--json")
        // File names: -c offers configuration files, --database databases (not the other).
        #expect(lines.dropFirst(3).first == file, "\(lines)")
        #expect(lines.last == directory.path("c.db"), "\(lines)")
    }
}

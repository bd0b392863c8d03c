import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A usage error is what every other error of `ferry` is: one line on stderr, `ferry: ...`,
/// and its documented exit code (64), nothing on stdout.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: FerrydProcessTests.binary("ferry")), "build ferry first: swift build"))
struct UsageErrorTests {
    static func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: FerrydProcessTests.binary("ferry"))
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile(), errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self))
    }

    @Test(arguments: [["sync", "--bogus"], ["nosuch"], ["status", "--json", "extra", "args"], ["changes", "--limit", "many"]])
    func aUsageErrorIsOneLineAndExit64(_ arguments: [String]) throws {
        let result = try Self.run(arguments)
        #expect(result.status == 64)
        #expect(result.out.isEmpty)
        let lines = result.err.split(separator: "\n")
        #expect(lines.count == 1, "\(result.err)")
        #expect(lines.first?.hasPrefix("ferry: ") == true)
        #expect(lines.first?.hasSuffix("(see ferry --help)") == true)
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
        let result = try Self.run(["sync", "-c", file])
        #expect(result.status == 64)
        #expect(result.err == "ferry: \(file) sets no database, so as root it would write the service's replica /var/lib/ferry/ferry.db; set database = in its [ferry] section, or pass --database PATH\n")
    }

    /// The bash completion script, sourced in bash and run as bash runs it: store names from
    /// the configuration the line names (filtered by what is typed), a subcommand's options.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/bin/bash")))
    func bashCompletesStoreNamesAndOptions() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("ferry.conf")
        try "[ferry]\ndatabase = \(directory.path("c.db"))\n[store alpha]\nkind = json\nurl = https://a.example.com/x\n[store beta]\nkind = json\nurl = https://a.example.com/y\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let bin = (FerrydProcessTests.binary("ferry") as NSString).deletingLastPathComponent
        let script = """
            source <(ferry --generate-completion-script bash)
            complete() { COMPREPLY=(); COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
                         _ferry ferry "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"; echo "${COMPREPLY[*]}"; }
            complete ferry sync -c \(file) ""
            complete ferry sync -c \(file) al
            complete ferry status --js
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
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first.map { Set($0.split(separator: " ")) } == ["alpha", "beta"])
        #expect(lines.dropFirst().first == "alpha")
        #expect(lines.last == "--json")
    }
}

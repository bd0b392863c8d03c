import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The exit codes scripts and systemd rely on are listed the same everywhere: every code
/// `ferry` and `ferryd` use is in `ferry --help` and in the README's table.
@Suite struct ExitCodeDocumentationTests {
    @Test func theHelpTextNamesEveryCodeOnce() {
        let text = FerryExitCode.helpText
        for code in FerryExitCode.allCases {
            #expect(text.components(separatedBy: " \(code.rawValue) ").count + (text.hasPrefix("Exit codes: \(code.rawValue) ") ? 1 : 0) >= 2,
                    "\(code) (\(code.rawValue)) in \(text)")
        }
    }

    @Test func theReadmeNamesEveryCode() throws {
        let readme = try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "Errors are one line (`ferry: ...`) and the exit codes are:"))
        let paragraph = readme[start.upperBound...].prefix { $0 != "#" }.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for code in FerryExitCode.allCases {
            #expect((" " + paragraph).contains(" \(code.rawValue) "), "README's exit codes lack \(code.rawValue) (\(code))")
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: FerrydProcessTests.binary("ferry")), "build ferry first: swift build"))
    func ferryHelpShowsThem() throws {
        let help = String(decoding: try Shell.run(FerrydProcessTests.binary("ferry"), ["--help"]), as: UTF8.self)
        let flat = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(flat.contains(FerryExitCode.helpText), "\(help)")
    }
}

import Foundation

/// Where the pip-installed test servers live: `$FERRY_VENV/bin` (scripts/test.sh sets it and
/// installs them there), else `$PATH`.
enum TestTools {
    static func executable(_ name: String) -> String? {
        let environment = ProcessInfo.processInfo.environment
        var directories: [String] = []
        if let venv = environment["FERRY_VENV"] { directories.append(venv + "/bin") }
        directories += (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

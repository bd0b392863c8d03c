import ArgumentParser
import Foundation

/// A vdirsyncer pair of one CardDAV collection and a vdir, the peer the DAV and push
/// benchmarks time Ferry against.
struct VdirsyncerPair {
    let config: String
    let vdir: URL
    let executable: String

    init(url: String, directory: URL, venv: String) throws {
        vdir = directory.appendingPathComponent("vdir")
        executable = venv + "/bin/vdirsyncer"
        try FileManager.default.createDirectory(at: vdir, withIntermediateDirectories: true)
        config = directory.appendingPathComponent("config").path
        try """
        [general]
        status_path = "\(directory.path)/status/"

        [pair bench]
        a = "bench_remote"
        b = "bench_local"
        collections = null
        conflict_resolution = "a wins"

        [storage bench_remote]
        type = "carddav"
        url = "\(url)"

        [storage bench_local]
        type = "filesystem"
        path = "\(vdir.path)/"
        fileext = ".vcf"
        """.write(toFile: config, atomically: true, encoding: .utf8)
    }

    func files() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: vdir, includingPropertiesForKeys: nil).filter { $0.pathExtension == "vcf" }
    }

    /// `vdirsyncer sync`, timed.
    func sync() throws -> Double {
        try timed { try run(["sync"]) }.0
    }

    func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-c", config] + arguments
        process.standardOutput = FileHandle.nullDevice
        // It reports every card it copies on stderr: kept, and shown only when it fails.
        let log = vdir.deletingLastPathComponent().appendingPathComponent("vdirsyncer.log")
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else { throw ValidationError("cannot write \(log.path)") }
        process.standardError = try FileHandle(forWritingTo: log)
        let input = Pipe()
        process.standardInput = input
        try process.run()
        // discover may ask questions; answer none.
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let errors = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw ValidationError("vdirsyncer \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(errors.suffix(1000))")
        }
    }
}

/// Seconds `body` took, and what it returned.
func timed<T>(_ body: () throws -> T) rethrows -> (Double, T) {
    let start = ContinuousClock.now
    let value = try body()
    let elapsed = ContinuousClock.now - start
    return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, value)
}

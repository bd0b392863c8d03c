import ArgumentParser
import FerryKit
import FerryTestSupport
import Foundation

/// `ferry-bench core`: the core runtime against the `curl` command line, in the same run.
///
/// Machines here are shared and noisy, so each comparison alternates the two sides `rounds`
/// times and reports medians; the ratios are the point, not the absolute numbers.
struct CoreBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "core",
        abstract: "Callback session and run-loop operations vs the curl command line.",
        discussion: """
        Needs python3 and curl; uses nginx too when installed (apt-get install nginx-light) and \
        takes whichever server delivers the large body faster. The small-GET verdict uses nginx \
        when present: the Python server is single-threaded under its GIL and shares the two cores, \
        so against it the ratio measures the server's share of CPU more than the client. Run in release: \
        swift run -c release ferry-bench core
        """
    )

    @Option(help: "Size of the large body in bytes.")
    var bodyBytes = 200_000_000

    @Option(help: "Number of small GETs.")
    var requests = 10_000

    @Option(help: "Run-loop operations (and curl --parallel-max) for the small GETs.")
    var connections = 8

    @Option(help: "Alternating rounds per comparison (medians are reported).")
    var rounds = 3

    @Option(help: "Cross-thread latency samples.")
    var latencySamples = 10_000

    @Option(help: "Parked run-loop operations for the idle-CPU measurement.")
    var parked = 100

    @Option(help: "Seconds to watch the parked operations.")
    var parkedSeconds = 10.0

    @Flag(help: "Skip nginx even when it is installed.")
    var noNginx = false

    @Option(help: "Measurements to run, comma-separated from a,b,c,d (default: all).")
    var only = "a,b,c,d"

    func run() throws {
        var results: [Row] = []
        let parts = Set(only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })

        let python = try TestServer.fault()
        defer { python.stop() }
        let bodyName = "body-\(bodyBytes).bin"
        let nginx = noNginx ? nil : try NginxServer.start(files: [bodyName: bodyBytes, "small": 3])
        defer { nginx?.stop() }

        if parts.contains("a") {
            results.append(try measureBody(python: python, nginx: nginx, bodyName: bodyName))
        }

        // b. Small GETs on keep-alive connections.
        var smallServers: [any LoopbackServer] = [python]
        if let nginx { smallServers.append(nginx) }
        for server in smallServers where parts.contains("b") {
            Self.say("== b. \(requests) small GETs, \(connections) operations vs curl --parallel-max \(connections) (\(server.name))")
            results.append(try compareSmall(server: server, decidesVerdict: server === smallServers.last))
        }
        python.stop()
        nginx?.stop()

        // c. Cross-thread delivery latency.
        var latency: CrossThreadLatency.Result?
        if parts.contains("c") {
            Self.say("== c. cross-thread post → run latency, \(latencySamples) samples")
            let measured = try CrossThreadLatency.measure(samples: latencySamples)
            Self.say("   median \(Self.fixed(measured.median, 1)) µs, p99 \(Self.fixed(measured.p99, 1)) µs, max \(Self.fixed(measured.max, 1)) µs")
            latency = measured
        }

        // d. Idle CPU.
        var idleResult: IdleCPU.Result?
        if parts.contains("d") {
            Self.say("== d. CPU of \(parked) parked run-loop operations over \(Self.fixed(parkedSeconds, 0)) s")
            let idle = try IdleCPU.measure(operations: parked, seconds: parkedSeconds)
            Self.say("   /proc/self/task/<tid>/stat utime+stime: \(idle.ticks) ticks → \(Self.fixed(idle.statPercent, 4))% of a core")
            if let schedstat = idle.schedstatPercent {
                Self.say("   /proc/self/task/<tid>/schedstat run time: \(Self.fixed(idle.schedstatMilliseconds ?? 0, 3)) ms → \(Self.fixed(schedstat, 4))% of a core (start-up before the window: \(Self.fixed(idle.startupMilliseconds ?? 0, 3)) ms)")
            }
            idleResult = idle
        }

        Self.say("")
        printTable(results)
        Self.say("")
        for row in results where row.verdictCounts {
            Self.say(row.verdict)
        }
        if let latency {
            let met = latency.p99 <= 100
            Self.say("verdict latency p99: \(met ? "met" : "not met") (\(Self.fixed(latency.p99, 1)) µs, goal ≤ 100 µs; median \(Self.fixed(latency.median, 1)) µs)")
        }
        if let idle = idleResult {
            // The verdict takes the worse of the two readings (stat ticks are 10 ms coarse).
            let percent = max(idle.statPercent, idle.schedstatPercent ?? 0)
            let met = percent <= 0.05
            Self.say("verdict idle CPU: \(met ? "met" : "not met") (\(Self.fixed(percent, 4))% of a core for \(parked) parked operations, goal ≤ 0.05%)")
        }
    }

    // MARK: - Comparisons

    /// One comparison's medians.
    struct Row {
        var name: String
        var unit: String
        var ferry: Double
        var curl: Double
        var goal: Double
        /// Whether this row decides a goal's verdict (with nginx present, the Python server's
        /// small-GET row is informational).
        var verdictCounts: Bool

        var ratio: Double { ferry / curl }
        var verdict: String {
            "verdict \(name): \(ratio >= goal ? "met" : "not met") (\(CoreBenchmark.fixed(ratio, 2))×, goal ≥ \(CoreBenchmark.fixed(goal, 2))×)"
        }
    }

    /// a. Picks the faster server by one curl download from each, then compares on it.
    private func measureBody(python: TestServer, nginx: NginxServer?, bodyName: String) throws -> Row {
        Self.say("== a. \(Self.megabytes(bodyBytes)) body: callback path vs curl -o /dev/null")
        var best = (server: python as any LoopbackServer, url: "\(python.baseURL)/bytes/\(bodyBytes)", seconds: Double.infinity)
        var candidates = [best]
        if let nginx { candidates.append((nginx, "\(nginx.baseURL)/\(bodyName)", .infinity)) }
        for candidate in candidates {
            let seconds = try Self.curl(["-s", "-f", "-o", "/dev/null", candidate.url])
            Self.say("   server probe: \(candidate.server.name) serves curl at \(Self.rate(Double(bodyBytes) / seconds / 1e6, "MB/s"))")
            if seconds < best.seconds { best = (candidate.server, candidate.url, seconds) }
        }
        Self.say("   using \(best.server.name) (the faster server)")
        return try compareBody(url: best.url, server: best.server.name)
    }

    private func compareBody(url: String, server: String) throws -> Row {
        var ferry: [Double] = []
        var curl: [Double] = []
        for round in 1...rounds {
            let ferryCPU = Self.cpuSeconds(RUSAGE_SELF)
            let (seconds, bytes, _) = try Self.runFetches([[url]], maxResponseBytes: Int64(bodyBytes) * 2)
            let ferryUsed = Self.cpuSeconds(RUSAGE_SELF) - ferryCPU
            guard bytes == Int64(bodyBytes) else {
                throw BenchError.transferFailed("received \(bytes) of \(bodyBytes) bytes")
            }
            ferry.append(Double(bytes) / seconds / 1e6)
            let curlCPU = Self.cpuSeconds(RUSAGE_CHILDREN)
            let curlSeconds = try Self.curl(["-s", "-f", "-o", "/dev/null", url])
            let curlUsed = Self.cpuSeconds(RUSAGE_CHILDREN) - curlCPU
            curl.append(Double(bodyBytes) / curlSeconds / 1e6)
            Self.say("   round \(round): ferry \(Self.rate(ferry.last!, "MB/s")) (CPU \(Self.fixed(ferryUsed, 2)) s), curl \(Self.rate(curl.last!, "MB/s")) (CPU \(Self.fixed(curlUsed, 2)) s)")
        }
        return Row(name: "\(Self.megabytes(bodyBytes)) body (\(server))", unit: "MB/s",
                   ferry: Self.median(ferry), curl: Self.median(curl), goal: 0.8, verdictCounts: true)
    }

    private func compareSmall(server: any LoopbackServer, decidesVerdict: Bool) throws -> Row {
        let urls = (0..<requests).map { "\(server.baseURL)/small?i=\($0)" }
        // The same URLs for curl, in a -K config file, every response to /dev/null.
        let configFile = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-bench-urls-\(getpid()).conf")
        let config = urls.map { "url = \"\($0)\"\noutput = \"/dev/null\"\n" }.joined()
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: configFile) }

        let perOperation = (0..<connections).map { index in
            stride(from: index, to: urls.count, by: connections).map { urls[$0] }
        }
        var ferry: [Double] = []
        var curl: [Double] = []
        for round in 1...rounds {
            try Self.resetStats(server)
            let ferryCPU = Self.cpuSeconds(RUSAGE_SELF)
            let (seconds, _, opened) = try Self.runFetches(perOperation, maxResponseBytes: 1 << 20)
            let ferryUsed = Self.cpuSeconds(RUSAGE_SELF) - ferryCPU
            ferry.append(Double(requests) / seconds)
            let ferryServerConnections = try Self.serverConnections(server)
            try Self.resetStats(server)
            let curlCPU = Self.cpuSeconds(RUSAGE_CHILDREN)
            let curlSeconds = try Self.curl(["-s", "-f", "--parallel", "--parallel-max", "\(connections)", "-K", configFile.path])
            let curlUsed = Self.cpuSeconds(RUSAGE_CHILDREN) - curlCPU
            curl.append(Double(requests) / curlSeconds)
            let curlServerConnections = try Self.serverConnections(server)
            let perRequest = { (cpu: Double) in Self.fixed(cpu / Double(requests) * 1e6, 1) + " µs CPU/req" }
            Self.say("   round \(round): ferry \(Self.rate(ferry.last!, "req/s")) (\(perRequest(ferryUsed)), \(opened) connections opened\(ferryServerConnections.map { ", server saw \($0)" } ?? "")), curl \(Self.rate(curl.last!, "req/s")) (\(perRequest(curlUsed))\(curlServerConnections.map { ", server saw \($0) connections" } ?? ""))")
        }
        return Row(name: "\(requests) small GETs (\(server.name))", unit: "req/s",
                   ferry: Self.median(ferry), curl: Self.median(curl), goal: 0.9, verdictCounts: decidesVerdict)
    }

    /// User + system CPU seconds of this process (`RUSAGE_SELF`, every thread) or of its waited-for
    /// children (`RUSAGE_CHILDREN`: the curl runs).
    private static func cpuSeconds(_ who: __rusage_who) -> Double {
        var usage = rusage()
        // getrusage fails only for an invalid `who` or pointer: a bug here.
        precondition(getrusage(__rusage_who_t(who.rawValue), &usage) == 0, "getrusage: errno \(errno)")
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Zeroes the fault server's counters (nginx has none).
    private static func resetStats(_ server: any LoopbackServer) throws {
        guard server is TestServer else { return }
        _ = try curl(["-s", "-f", "-o", "/dev/null", server.baseURL + "/stats/reset"])
    }

    /// Connections the fault server accepted since its last reset; nil for nginx.
    private static func serverConnections(_ server: any LoopbackServer) throws -> Int? {
        guard server is TestServer else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-f", server.baseURL + "/stats"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return object?["connections"] as? Int
    }

    /// Runs one ``FetchOperation`` per URL list, all at once on one queue; returns wall seconds
    /// from enqueueing to the last finish, the total body bytes and the connections opened.
    private static func runFetches(_ lists: [[String]], maxResponseBytes: Int64) throws -> (Double, Int64, Int) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = lists.count
        let operations = lists.map { FetchOperation(urls: $0, maxResponseBytes: maxResponseBytes) }
        let start = DispatchTime.now().uptimeNanoseconds
        queue.addOperations(operations, waitUntilFinished: false)
        queue.waitUntilAllOperationsAreFinished()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        var bytes: Int64 = 0
        for operation in operations {
            bytes += try operation.output()
        }
        return (seconds, bytes, operations.reduce(0) { $0 + $1.connectionsOpened })
    }

    /// Runs `curl arguments...`, returning its wall time; a non-zero exit throws.
    static func curl(_ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        // curl 7.88 draws its --parallel progress meter even with -s; keep stderr for errors only.
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-bench-curl-\(getpid()).err")
        guard FileManager.default.createFile(atPath: errors.path, contents: nil) else {
            throw BenchError.curlFailed("cannot create \(errors.path)")
        }
        defer { try? FileManager.default.removeItem(at: errors) }
        process.standardError = try FileHandle(forWritingTo: errors)
        let start = DispatchTime.now().uptimeNanoseconds
        try process.run()
        process.waitUntilExit()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard process.terminationStatus == 0 else {
            let message = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw BenchError.curlFailed("exit \(process.terminationStatus): curl \(arguments.joined(separator: " ")): \(message.suffix(300))")
        }
        return seconds
    }

    // MARK: - Output

    private func printTable(_ rows: [Row]) {
        let header = ["measurement", "ferry", "curl", "ratio", "goal"]
        let lines = rows.map { row in
            [row.name, Self.rate(row.ferry, row.unit), Self.rate(row.curl, row.unit),
             Self.fixed(row.ratio, 2) + "×", "≥ " + Self.fixed(row.goal, 2) + "×"]
        }
        let widths = header.indices.map { column in
            ([header] + lines).map { $0[column].count }.max() ?? 0
        }
        for line in [header] + lines {
            Self.say(line.enumerated().map { index, cell in
                index == 0 ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[index] - cell.count) + cell
            }.joined(separator: "   "))
        }
    }

    /// Writes a line at once (print is block-buffered when piped, hiding progress).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func median(_ values: [Double]) -> Double {
        percentile(values, 0.5)
    }

    /// Nearest-rank percentile of `values` (`fraction` in 0...1).
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    static func fixed(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }

    static func rate(_ value: Double, _ unit: String) -> String {
        "\(fixed(value, 0)) \(unit)"
    }

    static func megabytes(_ bytes: Int) -> String {
        "\(bytes / 1_000_000) MB"
    }
}

import ArgumentParser

/// Benchmarks: each prints ratios against baselines measured in the same run, because these
/// machines are shared and noisy.
struct FerryBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ferry-bench",
        abstract: "Ferry's benchmarks (run with `swift run -c release ferry-bench <name>`).",
        subcommands: [CoreBenchmark.self, StoreBenchmark.self, JSONBenchmark.self, DAVBenchmark.self, JSONEndToEndBenchmark.self, JSONEndToEndPass.self, PushBenchmark.self, NotifyBenchmark.self])
}

FerryBench.main()

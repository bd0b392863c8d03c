// swift-tools-version: 6.0
import PackageDescription

// Swift 6 language mode everywhere: data races are compile errors, not production incidents.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "Ferry",
    products: [
        .library(name: "FerryKit", targets: ["FerryKit"]),
        .executable(name: "ferryd", targets: ["ferryd"]),
        .executable(name: "ferry", targets: ["ferry"]),
        .executable(name: "ferry-bench", targets: ["ferry-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // ferryd's HTTP listener (change notifications and /metrics): NIO's HTTP/1 codec, not a
        // hand-written parser, and none of the heavier server frameworks on top of it.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
    ],
    targets: [
        // One system-library target per C library; each shim wraps only what Swift cannot call.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // OpenSSL's libcrypto, which libcurl already links: HMAC-SHA256 for webhook signatures.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // libical (Debian's libical-dev): RFC 5545 recurrence and time zones for the calendar
        // time-range filter a server that refuses calendar-query needs.
        .systemLibrary(name: "CICal", providers: [.apt(["libical-dev"])]),
        .target(
            name: "FerryKit",
            dependencies: [
                "CCurl", "CSQLite", "CSystemd", "CICal", "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ferryd",
            dependencies: ["FerryKit", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ferry",
            dependencies: ["FerryKit", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ferry-bench",
            dependencies: ["FerryKit", "FerryTestSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        // What the tests and the benchmarks share: loopback servers (Ferry's Python servers,
        // nginx), a pass run into a recording sink, seeded data, a scheduler environment driven
        // by hand. A target of its own, because a test target cannot be imported.
        .target(
            name: "FerryTestSupport",
            dependencies: ["FerryKit", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // Crash-test helper: merges deterministic batches in a loop until SIGKILLed
        // (Tests/FerryKitTests/Store/CrashTests.swift).
        .executableTarget(
            name: "ferry-store-torture",
            dependencies: ["FerryKit"],
            swiftSettings: strict
        ),
        // libFuzzer targets for the parsers (scripts/fuzz.sh; FUZZ_TARGET picks one). The normal
        // build makes a corpus replayer; the fuzzing build adds -sanitize=fuzzer -DFERRY_LIBFUZZER.
        .target(name: "CLibFuzzer", path: "Sources/ferry-fuzz-libfuzzer"),
        .executableTarget(
            name: "ferry-fuzz",
            dependencies: ["FerryKit", "CLibFuzzer"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "FerryKitTests",
            dependencies: ["FerryKit", "FerryTestSupport", .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)

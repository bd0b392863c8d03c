import Foundation

#if !FERRY_LIBFUZZER
/// The normal build's `main`: replays corpus files or crash inputs through the same targets,
/// without libFuzzer (so `swift build` builds this target like any other executable).
///
///     FUZZ_TARGET=config swift run ferry-fuzz Tests/Fuzz/corpus/config crash-1234
///
/// The fuzzing build passes `-DFERRY_LIBFUZZER`, which removes this type: libFuzzer brings
/// its own `main`, and two would not link.
@main
enum FuzzReplay {
    static func main() {
        let paths = CommandLine.arguments.dropFirst()
        guard !paths.isEmpty else {
            FileHandle.standardError.write(Data("usage: FUZZ_TARGET=<json|multistatus|card|config> ferry-fuzz <file or directory>...\n".utf8))
            exit(2)
        }
        _ = FuzzTarget.selected  // Fail fast on a missing or unknown FUZZ_TARGET.
        var count = 0
        for path in paths {
            for file in files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("ferry-fuzz: cannot read \(file)\n".utf8))
                    exit(1)
                }
                data.withUnsafeBytes { raw in
                    let bytes = raw.bindMemory(to: UInt8.self)
                    // An empty Data has no base address; libFuzzer never passes NULL, so neither do we.
                    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, bytes.count)) { buffer in
                        _ = buffer.initialize(fromContentsOf: bytes)
                        _ = fuzz(UnsafePointer(buffer.baseAddress!), bytes.count)
                    }
                }
                count += 1
            }
        }
        print("ferry-fuzz [\(FuzzTarget.selected.rawValue)]: \(count) inputs replayed, invariants held")
    }

    /// `path` itself, or the regular files directly inside it, sorted.
    static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return [path]
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { path + "/" + $0 }
    }
}
#endif

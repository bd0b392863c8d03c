import Foundation

/// libFuzzer's entry point: called once per generated input, from one thread.
///
/// Always compiled (it is an ordinary exported function in the normal build, where the replay
/// driver ``FuzzReplay`` calls it); with `-sanitize=fuzzer` libFuzzer's own `main` calls it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.selected.run(Data(bytes: data, count: size))
    return 0
}

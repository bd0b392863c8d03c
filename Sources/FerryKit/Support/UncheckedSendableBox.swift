/// Carries a value owned by one thread through a `@Sendable` closure that runs on that same
/// thread (a block posted to the run loop that created it).
///
/// The compiler cannot see that the closure comes back to the owning thread, so the box says
/// it for it: use it only where the closure is posted to that thread's own run loop, never to
/// share a value between threads.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

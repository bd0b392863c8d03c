import Foundation
import Logging

/// Runs one ``DAVDiscovery`` on a thread and run loop of its own: what `ferry discover` waits
/// for, one operation per store.
public final class DiscoveryOperation: RunLoopOperation<DAVAccount, SyncError>, @unchecked Sendable {
    public let store: StoreConfiguration
    private let authentication: HTTPAuthentication
    private let contents: [WebDAVOptions.Content]
    private let logger: Logger
    /// Touched only on the operation's thread.
    private var discovery: DAVDiscovery?

    public init(store: StoreConfiguration, authentication: HTTPAuthentication, contents: [WebDAVOptions.Content], logger: Logger) {
        self.store = store
        self.authentication = authentication
        self.contents = contents
        self.logger = logger
        super.init(cancelled: .failure(SyncError(.cancelled, store: store.name, message: "discovery cancelled")))
        name = "ferry-discover-\(store.name)"
    }

    /// Discovery for a `carddav`, `caldav` or `dav-account` store: its URL, credentials and
    /// contents. Nil for a store of another kind.
    public convenience init?(store: StoreConfiguration, logger: Logger) {
        if let options = store.options.as(WebDAVOptions.self) {
            self.init(store: store, authentication: options.authentication, contents: [options.content], logger: logger)
        } else if let options = store.options.as(DAVAccountOptions.self) {
            self.init(store: store, authentication: options.authentication, contents: options.contents, logger: logger)
        } else {
            return nil
        }
    }

    public override func run() {
        let discovery = DAVDiscovery(store: store, authentication: authentication, contents: contents, logger: logger)
        self.discovery = discovery
        discovery.start { [self] result in
            self.discovery = nil
            finish(result)
        }
    }

    public override func cancelRun() {
        discovery?.cancel()
        discovery = nil
        finish(cancelledOutcome)
    }
}

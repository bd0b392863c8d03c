/// What one listener accepts at most: the bounds that keep a flood of requests from costing
/// more than they say (memory per connection, time per request, connections at once).
public struct ListenerLimits: Sendable, Equatable {
    /// A larger body is refused with 413 before it is read: a notification says little (GitHub
    /// and Stripe events are a few KiB; a notification is only a trigger here).
    public var maxBodyBytes = 1 << 20
    /// The request line and headers together; more is refused with 431 by NIO's decoder.
    public var maxHeaderBytes = 16 << 10
    /// A connection that has not sent its whole request by then is closed (slow clients hold a
    /// slot each); Graph wants its validation answered within 10 seconds anyway.
    public var requestTimeout: Duration = .seconds(10)
    /// Connections open at once; one more is closed as soon as it is accepted.
    public var maxConnections = 256
    /// Requests waiting for their answer at once (a `ferry sync --now` waits for its pass).
    public var maxPending = 64

    public init() {}
}

/// Why the listener turned a request away before any route saw it, or answered it with an
/// error of the protocol: the `reason` label of `ferry_listener_refused_total`.
public enum ListenerRefusal: String, Sendable, CaseIterable {
    /// More connections than ``ListenerLimits/maxConnections``.
    case tooManyConnections = "too_many_connections"
    /// The body is over ``ListenerLimits/maxBodyBytes``.
    case bodyTooLarge = "body_too_large"
    /// Not a request NIO's HTTP/1 decoder accepts (which includes headers over the limit).
    case badRequest = "bad_request"
    /// The request was not whole within ``ListenerLimits/requestTimeout``.
    case timeout
    /// No such path (or a store that takes no notifications).
    case notFound = "not_found"
    /// A method the path does not take.
    case methodNotAllowed = "method_not_allowed"
}

/// What the listener sends back: a status, a plain body, and nothing that varies with a secret.
public struct ListenerAnswer: Sendable, Equatable {
    public var status: Int
    public var body: String
    public var contentType: String
    public var extraHeaders: [String: String]

    public init(_ status: Int, _ body: String, contentType: String = "text/plain; charset=utf-8", extraHeaders: [String: String] = [:]) {
        self.status = status
        self.body = body
        self.contentType = contentType
        self.extraHeaders = extraHeaders
    }
}

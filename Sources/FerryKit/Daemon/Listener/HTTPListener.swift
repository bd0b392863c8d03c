import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// ferryd's HTTP/1.1 server: one listening socket, NIO's HTTP decoder and encoder, and each
/// whole request handed to ``Handler`` (the routes: metrics, notifications, the control
/// socket's pass requests).
///
/// Every connection carries one request and is closed after its answer; what a proxy or a
/// scraper loses by that is a TCP handshake on loopback. The bounds are ``ListenerLimits``:
/// connections beyond the limit are closed at once, a body over the limit is refused with
/// 413 before it is read, a request not whole within the timeout is cut off. The handler runs
/// on the listener's event loop and answers through `respond`, from any thread.
public final class HTTPListener: Sendable {
    public typealias Handler = @Sendable (_ request: NotificationRequest, _ respond: @escaping @Sendable (ListenerAnswer) -> Void) -> Void

    /// Where to listen.
    public enum Address: Sendable, Equatable, CustomStringConvertible {
        case tcp(MetricsEndpoint)
        /// A listening socket systemd passed (socket activation).
        case inherited(Int32)
        /// A Unix socket at this path, made readable and writable by its owner only.
        case unix(String)

        public var description: String {
            switch self {
            case .tcp(let endpoint): "\(endpoint)"
            case .inherited(let fd): "the socket systemd passed (fd \(fd))"
            case .unix(let path): path
            }
        }
    }

    private let channel: any Channel
    /// What the listener is bound to, for logs.
    public let boundTo: String
    /// The TCP port bound (for tests that bind port 0); 0 for a Unix socket.
    public let port: Int

    /// Binds `address` on `group` and starts serving.
    public init(address: Address, group: any EventLoopGroup, limits: ListenerLimits = ListenerLimits(),
                onRefusal: @escaping @Sendable (ListenerRefusal) -> Void = { _ in }, handler: @escaping Handler) throws(ListenerError) {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { server in
                server.eventLoop.makeCompletedFuture {
                    try server.pipeline.syncOperations.addHandler(
                        ConnectionLimiter(limit: limits.maxConnections, onRefusal: onRefusal))
                }
            }
            .childChannelOption(.maxMessagesPerRead, value: 4)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    var decoderLimits = NIOHTTPDecoderLimitConfiguration()
                    decoderLimits.maxHeaderFieldSize = limits.maxHeaderBytes
                    decoderLimits.maxHeaderListSize = limits.maxHeaderBytes
                    decoderLimits.maxHeaderFieldCount = 100
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withPipeliningAssistance: false, withErrorHandling: true, withOutboundHeaderValidation: true,
                        withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits)
                    try channel.pipeline.syncOperations.addHandler(
                        RequestHandler(limits: limits, onRefusal: onRefusal, handler: handler))
                }
            }
        let description = address.description
        do {
            switch address {
            case .tcp(let endpoint):
                channel = try bootstrap.bind(host: endpoint.address, port: Int(endpoint.port)).wait()
            case .inherited(let fd):
                channel = try bootstrap.withBoundSocket(fd).wait()
            case .unix(let path):
                // Not by umask: it is the process's, and a replica a pass creates meanwhile on
                // another thread would get the socket's mode. Connecting takes write permission,
                // which the mode bind leaves (0777 less the umask; 0755 under systemd's default)
                // gives no one but ferryd's user, in a directory only it may write; 0600 then
                // keeps it so under any umask, before anyone is told of the socket.
                channel = try bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).wait()
                guard chmod(path, 0o600) == 0 else {
                    let code = errno
                    channel.close(promise: nil)
                    throw ListenerError(operation: "chmod 0600", address: description, code: code)
                }
            }
        } catch let error as ListenerError {
            throw error
        } catch let error as IOError {
            throw ListenerError(operation: "bind", address: description, code: error.errnoCode)
        } catch {
            throw ListenerError(operation: "bind (\(error))", address: description, code: EINVAL)
        }
        boundTo = description
        port = channel.localAddress?.port ?? 0
    }

    /// Stops accepting; connections open finish their request.
    public func stop() {
        channel.close(promise: nil)
    }
}

/// Closes a connection accepted beyond the limit before it is set up.
///
/// It sits in the listening socket's pipeline, ahead of the bootstrap's own handler, so it
/// sees connections in the order they were accepted. Counted in each connection's initializer
/// instead, on a group of several event loops, the count would follow whichever loop ran
/// first: a connection accepted last could be served and an earlier one refused.
private final class ConnectionLimiter: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let limit: Int
    private let onRefusal: @Sendable (ListenerRefusal) -> Void
    private let open = ConnectionCounter()

    init(limit: Int, onRefusal: @escaping @Sendable (ListenerRefusal) -> Void) {
        self.limit = limit
        self.onRefusal = onRefusal
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let connection = unwrapInboundIn(data)
        guard open.open() <= limit else {
            open.close()
            onRefusal(.tooManyConnections)
            connection.close(promise: nil)
            return
        }
        connection.closeFuture.whenComplete { [open] _ in open.close() }
        context.fireChannelRead(data)
    }
}

/// Connections open at once. Incremented on the listening socket's event loop and decremented
/// on each connection's own, when it closes.
private final class ConnectionCounter: Sendable {
    private let count = Atomic<Int>(0)
    func open() -> Int { count.wrappingAdd(1, ordering: .relaxed).newValue }
    func close() { count.wrappingSubtract(1, ordering: .relaxed) }
}

/// One connection's request: head, body up to the limit, then the handler's answer.
private final class RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case waitingForHead
        case readingBody(HTTPRequestHead, [UInt8])
        /// The request was handed over (or refused); anything more on the connection is ignored.
        case answering
    }

    private let limits: ListenerLimits
    private let onRefusal: @Sendable (ListenerRefusal) -> Void
    private let handler: HTTPListener.Handler
    private var state = State.waitingForHead
    private var deadline: Scheduled<Void>?

    init(limits: ListenerLimits, onRefusal: @escaping @Sendable (ListenerRefusal) -> Void, handler: @escaping HTTPListener.Handler) {
        self.limits = limits
        self.onRefusal = onRefusal
        self.handler = handler
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let onRefusal = self.onRefusal
        deadline = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(limits.requestTimeout.seconds * 1e9))) {
            onRefusal(.timeout)
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .waitingForHead):
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > limits.maxBodyBytes {
                refuse(.bodyTooLarge, context: context, version: head.version)
                return
            }
            if head.headers.first(name: "expect")?.lowercased() == "100-continue" {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
            }
            state = .readingBody(head, [])
        case (.body(let buffer), .readingBody(let head, var body)):
            guard body.count + buffer.readableBytes <= limits.maxBodyBytes else {
                refuse(.bodyTooLarge, context: context, version: head.version)
                return
            }
            state = .answering  // let go of the array's other reference before appending
            body.append(contentsOf: buffer.readableBytesView)
            state = .readingBody(head, body)
        case (.end, .readingBody(let head, let body)):
            state = .answering
            // Whole in time: what follows is the handler's to bound (a pass a person waits for
            // takes as long as it takes; every other route answers at once).
            deadline?.cancel()
            let request = NotificationRequest(method: head.method.rawValue, target: head.uri,
                                              headers: head.headers.map { ($0.name, $0.value) }, body: body)
            let loop = context.eventLoop
            let bound = NIOLoopBound(context, eventLoop: loop)
            let version = head.version
            let headOnly = head.method == .HEAD
            handler(request) { answer in
                loop.execute { Self.write(answer, version: version, headOnly: headOnly, context: bound.value) }
            }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIO's error handler before this one has answered 400 to what it could not decode.
        if error is HTTPParserError { onRefusal(.badRequest) }
        context.close(promise: nil)
    }

    private func refuse(_ refusal: ListenerRefusal, context: ChannelHandlerContext, version: HTTPVersion) {
        state = .answering
        onRefusal(refusal)
        Self.write(ListenerAnswer(413, "request body too large\n"), version: version, headOnly: false, context: context)
    }

    private static func write(_ answer: ListenerAnswer, version: HTTPVersion, headOnly: Bool, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let body = Array(answer.body.utf8)
        var headers = NIOHTTP1.HTTPHeaders()
        headers.add(name: "Content-Type", value: answer.contentType)
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Connection", value: "close")
        // Nothing here is for a browser to render or keep.
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Cache-Control", value: "no-store")
        for (name, value) in answer.extraHeaders.sorted(by: { $0.key < $1.key }) { headers.add(name: name, value: value) }
        let head = HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: answer.status), headers: headers)
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        if !headOnly, !body.isEmpty {
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// A listener could not be set up: which call, on which address, and the errno.
public struct ListenerError: Error, Sendable, Equatable, CustomStringConvertible {
    public let operation: String
    public let address: String
    public let code: Int32

    public var description: String {
        let hint = code == EADDRINUSE ? " (another process listens there: choose another port)"
            : code == EADDRNOTAVAIL ? " (no interface of this machine has that address)" : ""
        return "cannot listen on \(address): \(operation): \(String(cString: strerror(code)))\(hint)"
    }
}

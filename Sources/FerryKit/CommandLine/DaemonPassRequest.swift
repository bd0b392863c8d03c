import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// `ferry sync --now STORE`: asks the running ferryd for a pass of one store through its
/// control socket and waits for the pass to end, so a script or hook gets the pass without a
/// second process syncing the store beside the daemon.
public enum DaemonPassRequest {
    /// What ferryd answered: its line, and the exit code `ferry sync` would have given.
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var message: String
        public var exitCode: FerryExitCode
    }

    /// Asks ferryd at `socketPath` for a pass of `store`, waiting at most `timeout`.
    public static func run(store: String, socketPath: String, timeout: Duration) throws(DaemonPassRequestError) -> Answer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let promise = group.next().makePromise(of: (HTTPResponseHead, [UInt8]).self)
        let channel: any Channel
        do {
            channel = try ClientBootstrap(group: group)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise))
                    }
                }
                .connect(unixDomainSocketPath: socketPath).wait()
        } catch let error as IOError {
            promise.fail(error)
            throw DaemonPassRequestError.cannotConnect(socketPath: socketPath, code: error.errnoCode)
        } catch {
            promise.fail(error)
            throw DaemonPassRequestError.cannotConnect(socketPath: socketPath, code: ECONNREFUSED)
        }
        var headers = NIOHTTP1.HTTPHeaders()
        headers.add(name: "Host", value: "ferryd")
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/sync/\(store)", headers: headers)
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout.seconds * 1e9))) {
            promise.fail(DaemonPassRequestError.timedOut(store: store, after: timeout))
        }
        defer {
            deadline.cancel()
            channel.close(promise: nil)
        }
        let (response, body): (HTTPResponseHead, [UInt8])
        do {
            (response, body) = try promise.futureResult.wait()
        } catch let error as DaemonPassRequestError {
            throw error
        } catch {
            throw DaemonPassRequestError.noAnswer(socketPath: socketPath)
        }
        let message = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .newlines)
        let code = response.headers.first(name: PassAnswer.exitCodeHeader).flatMap(Int32.init).flatMap(FerryExitCode.init(rawValue:))
            ?? (response.status.code == 200 ? .success : .failure)
        return Answer(status: Int(response.status.code), message: message, exitCode: code)
    }
}

/// Why ferryd could not be asked, with what to do about it.
public enum DaemonPassRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    case cannotConnect(socketPath: String, code: Int32)
    case noAnswer(socketPath: String)
    case timedOut(store: String, after: Duration)

    public var description: String {
        switch self {
        case .cannotConnect(let path, let code) where code == EACCES || code == EPERM:
            "may not use ferryd's control socket \(path): only ferryd's user and root may ask it for a pass (sudo -u ferry ferry sync --now ...)"
        case .cannotConnect(let path, let code) where code == ENOENT || code == ECONNREFUSED:
            "ferryd is not running (nothing listens at \(path)); start it, or run ferry sync without --now to sync in this process"
        case .cannotConnect(let path, let code):
            "cannot reach ferryd at \(path): \(String(cString: strerror(code)))"
        case .noAnswer(let path):
            "ferryd closed its control socket \(path) without answering (did it stop?)"
        case .timedOut(let store, let after):
            "no answer within \(ConfigurationUnits.format(after)): the pass of \(store) may still be running (ferry status shows it)"
        }
    }

    /// How `ferry` exits for it.
    public var exitCode: FerryExitCode {
        switch self {
        case .cannotConnect(_, let code) where code == EACCES || code == EPERM: .permission
        case .cannotConnect, .noAnswer: .unavailable
        case .timedOut: .busy
        }
    }
}

/// Collects one response's head and body, then fulfils the promise.
private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let promise: EventLoopPromise<(HTTPResponseHead, [UInt8])>
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []

    init(promise: EventLoopPromise<(HTTPResponseHead, [UInt8])>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(let buffer):
            // An answer is one line; more than this is not ferryd.
            if body.count < 65536 { body.append(contentsOf: buffer.readableBytesView) }
        case .end:
            if let head { promise.succeed((head, body)) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(DaemonPassRequestError.noAnswer(socketPath: ""))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }
}

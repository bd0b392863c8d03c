import Foundation

/// A TCP connection to 127.0.0.1 by hand, for the tests and benchmarks that must write bytes no
/// HTTP client would (a request trickled byte by byte, a flood without a client's per-request
/// cost).
public enum LoopbackSocket {
    /// A connected socket to 127.0.0.1:`port` whose reads and writes give up after `seconds`
    /// (so nothing hangs on a server that never answers), or nil when the connect failed (`errno` says why). The
    /// caller closes it.
    public static func connect(port: Int, seconds: Int = 10) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let failure = errno  // the caller may report it: close must not overwrite it
            close(fd)
            errno = failure
            return nil
        }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }
}

import FerryTestSupport
import Foundation

/// One HTTP/1.1 request to 127.0.0.1 on a fresh connection, its status read back: what a
/// webhook sender does, without a client library's per-request cost in the load generator.
enum LoopbackPost {
    /// The status code, or nil when the connection failed or no status line came back.
    static func send(port: Int, method: String = "POST", path: String, headers: [(String, String)] = [], body: [UInt8] = []) -> Int? {
        guard let fd = LoopbackSocket.connect(port: port) else { return nil }
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        var offset = 0
        while offset < request.count {
            let sent = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return nil }
            offset += sent
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while received.count < 16 {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += chunk[0..<count]
        }
        // "HTTP/1.1 202 ..."
        let line = String(decoding: received.prefix(16), as: UTF8.self)
        let parts = line.split(separator: " ")
        return parts.count >= 2 ? Int(parts[1]) : nil
    }
}

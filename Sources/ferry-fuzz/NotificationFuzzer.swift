import FerryKit
import Foundation

/// Fuzzes the listener's request path after NIO's decoder: routing a method and target, and
/// every notification scheme's header parsing and verification on the headers and body.
///
/// The input is read as `METHOD TARGET`, then `Name: value` lines up to an empty line, then
/// the body (a request as it reaches ``NotificationVerifier``, not bytes on the wire: NIO
/// parses those). Invariants, beyond "never traps":
/// - routing is a function of method, path and roles; a store route names a valid store;
/// - a refusal answers 401 or 403, a trigger 202, a handshake only for graph and google;
/// - for the HMAC schemes a verified request stops verifying when one byte of its body
///   changes (the signature covers the body);
/// - verification gives the same verdict twice.
enum NotificationFuzzer {
    static let secret = Secret("fuzz-secret", source: "fuzz")
    static let schemes = NotificationScheme.allCases.map {
        NotificationConfiguration(scheme: $0, secret: secret, header: $0 == .hmacSHA256 ? "X-Signature" : nil)
    }

    static func run(_ data: Data) {
        let bytes = Array(data)
        let headEnd = bytes.indices.first { index in index + 1 < bytes.count && bytes[index] == 10 && bytes[index + 1] == 10 } ?? bytes.count
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let body = headEnd + 2 <= bytes.count ? Array(bytes[(headEnd + 2)...]) : []
        let requestLine = head.first.map { $0.split(separator: " ", maxSplits: 1).map(String.init) } ?? []
        let method = requestLine.first ?? ""
        let target = requestLine.count > 1 ? requestLine[1] : "/"
        let headers: [(name: String, value: String)] = head.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]))
        }
        let request = NotificationRequest(method: method, target: target, headers: headers, body: body)

        for roles in [ListenerRoles.metrics, .notify, .control, [.metrics, .notify]] {
            let route = ListenerRoute.decide(method: method, path: request.path, roles: roles)
            FuzzCheck.expect(route == ListenerRoute.decide(method: method, path: request.path, roles: roles), "routing is not a function")
            switch route {
            case .notify(let store), .sync(let store):
                FuzzCheck.expect(!store.isEmpty && store.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }, "routed to store '\(store)'")
            case .refused(_, let answer):
                FuzzCheck.expect([404, 405].contains(answer.status), "a route refusal answers \(answer.status)")
            case .metrics, .index:
                break
            }
        }

        let now = Date(timeIntervalSince1970: 1_700_000_000)
        for settings in schemes {
            let verdict = NotificationVerifier.verify(request, settings, publicURL: "https://fuzz.example/notify/s", now: now)
            FuzzCheck.expect(verdict == NotificationVerifier.verify(request, settings, publicURL: "https://fuzz.example/notify/s", now: now),
                             "\(settings.scheme) verification is not a function")
            let answer = NotificationDesk.answer(verdict)
            switch verdict {
            case .refused: FuzzCheck.expect([401, 403].contains(answer.status), "a refusal answers \(answer.status)")
            case .trigger: FuzzCheck.expect(answer.status == 202, "a trigger answers \(answer.status)")
            case .handshake: FuzzCheck.expect([.graph, .google].contains(settings.scheme), "\(settings.scheme) answered a handshake")
            }
            if verdict == .trigger, [.stripe, .github, .shopify, .hubspot, .hmacSHA256].contains(settings.scheme), !body.isEmpty {
                var changed = request
                changed.body[0] ^= 1
                let again = NotificationVerifier.verify(changed, settings, publicURL: "https://fuzz.example/notify/s", now: now)
                FuzzCheck.expect(again != .trigger, "\(settings.scheme) verified a changed body")
            }
        }
    }
}

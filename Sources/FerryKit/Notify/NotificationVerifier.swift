import Foundation

/// What a notification request comes to.
public enum NotificationVerdict: Sendable, Equatable {
    /// Verified: the store runs a pass at once.
    case trigger
    /// A handshake the API makes before it sends notifications (Graph's validationToken,
    /// Google's `sync`): answered, and no pass.
    case handshake(Handshake)
    /// Not from the API as far as the store's secret can tell: 401 or 403, nothing changes.
    case refused(NotificationRefusal)

    public struct Handshake: Sendable, Equatable {
        public var status: Int
        /// What goes back as text/plain (Graph's token), or nothing.
        public var body: String
    }
}

/// Why a notification was refused; the `result` label of `ferry_notifications_total`.
public enum NotificationRefusal: String, Sendable, Equatable, CaseIterable {
    /// The header that carries the signature or token is not there.
    case missingSignature = "missing_signature"
    /// It is there but not in the scheme's form (no `t=`, not hex, not base64, not JSON...).
    case malformedSignature = "malformed_signature"
    /// It does not match: another secret, or a changed body, method, URL or timestamp.
    case wrongSignature = "wrong_signature"
    /// Signed, but longer ago (or further ahead) than the tolerance: a replay.
    case staleTimestamp = "stale_timestamp"
    /// Signed and fresh, but its signature was accepted before: a copy sent again within the
    /// tolerance.
    case replayed

    /// 401 when the request carries no credentials at all, 403 when they are wrong.
    public var status: Int { self == .missingSignature ? 401 : 403 }
}

/// Verification as each API documents it, as a pure function of the request, the store's
/// notification settings, the URL the API was told to call, and the time.
public enum NotificationVerifier {
    /// The longest Graph validationToken echoed: Graph's are a few hundred characters, and an
    /// echo of anything longer would only serve someone else.
    static let maxValidationToken = 1024

    /// - Parameter publicURL: the URL the API calls, as the API sees it (HubSpot signs it).
    public static func verify(_ request: NotificationRequest, _ settings: NotificationConfiguration, publicURL: String?,
                              now: Date) -> NotificationVerdict {
        let key = Array(settings.secret.value.utf8)
        switch settings.scheme {
        case .stripe:
            return stripe(request, key: key, tolerance: settings.tolerance, now: now)
        case .github:
            guard let header = request.header("X-Hub-Signature-256") else { return .refused(.missingSignature) }
            guard header.hasPrefix("sha256="), let sent = SignatureEncoding.bytes(hex: header.dropFirst("sha256=".count)), sent.count == 32 else {
                return .refused(.malformedSignature)
            }
            return matches(sent, HMACSHA256.authenticationCode(key: key, message: request.body))
        case .shopify:
            guard let header = request.header("X-Shopify-Hmac-Sha256") else { return .refused(.missingSignature) }
            guard let sent = SignatureEncoding.bytes(base64: header), sent.count == 32 else { return .refused(.malformedSignature) }
            return matches(sent, HMACSHA256.authenticationCode(key: key, message: request.body))
        case .hubspot:
            return hubspot(request, key: key, publicURL: publicURL, tolerance: settings.tolerance, now: now)
        case .graph:
            return graph(request, clientState: key)
        case .google:
            guard let token = request.header("X-Goog-Channel-Token") else { return .refused(.missingSignature) }
            guard HMACSHA256.constantTimeEquals(Array(token.utf8), key) else { return .refused(.wrongSignature) }
            // The first message on a new channel says it is open; nothing changed yet.
            if request.header("X-Goog-Resource-State") == "sync" { return .handshake(.init(status: 200, body: "")) }
            return .trigger
        case .hmacSHA256:
            guard let name = settings.header, let header = request.header(name) else { return .refused(.missingSignature) }
            let value = header.hasPrefix("sha256=") ? String(header.dropFirst("sha256=".count)) : header
            guard let sent = (value.count == 64 ? SignatureEncoding.bytes(hex: value) : nil) ?? SignatureEncoding.bytes(base64: value),
                  sent.count == 32 else { return .refused(.malformedSignature) }
            return matches(sent, HMACSHA256.authenticationCode(key: key, message: request.body))
        }
    }

    /// What tells `request` from a copy of it, for a scheme whose signature covers a
    /// timestamp (Stripe, HubSpot): the signature the store's secret makes over the timestamp
    /// and body, valid until the timestamp plus the tolerance. The header's own text is not
    /// it: a copy may be reformatted (spaces, order, another `v1`) and still verify. Nil for the
    /// others, whose signatures repeat for the same body and cannot tell a replay from a
    /// redelivery.
    public static func replayStamp(of request: NotificationRequest, _ settings: NotificationConfiguration, publicURL: String?) -> ReplayStamp? {
        let key = Array(settings.secret.value.utf8)
        switch settings.scheme {
        case .stripe:
            guard let header = request.header("Stripe-Signature"), let (timestamp, _) = stripeHeader(header),
                  let seconds = Double(timestamp) else { return nil }
            return ReplayStamp(signature: stripeSignature(timestamp: timestamp, body: request.body, key: key),
                               expires: Date(timeIntervalSince1970: seconds + settings.tolerance.seconds))
        case .hubspot:
            // Only v3 signs a timestamp; v1 and v2 are as GitHub's.
            guard request.header("X-HubSpot-Signature-v3") != nil,
                  let timestamp = request.header("X-HubSpot-Request-Timestamp"), timestamp.count <= 16,
                  let milliseconds = Double(timestamp), let publicURL else { return nil }
            return ReplayStamp(signature: hubspotSignature(request, timestamp: timestamp, publicURL: publicURL, key: key),
                               expires: Date(timeIntervalSince1970: milliseconds / 1000 + settings.tolerance.seconds))
        case .github, .shopify, .graph, .google, .hmacSHA256:
            return nil
        }
    }

    private static func matches(_ sent: [UInt8], _ expected: [UInt8]) -> NotificationVerdict {
        HMACSHA256.constantTimeEquals(sent, expected) ? .trigger : .refused(.wrongSignature)
    }

    /// Whether `timestamp` (seconds since the epoch) is within `tolerance` of `now`, either way.
    static func isFresh(_ timestamp: Double, tolerance: Duration, now: Date) -> Bool {
        abs(now.timeIntervalSince1970 - timestamp) <= tolerance.seconds
    }

    // MARK: - Stripe

    /// The timestamp and the `v1` signatures of a `Stripe-Signature` header; nil when it has
    /// no integer `t` or no `v1`. Other schemes (`v0`, test keys) are ignored, as Stripe says.
    static func stripeHeader(_ header: String) -> (timestamp: String, signatures: [[UInt8]])? {
        var timestamp: String?
        var signatures: [[UInt8]] = []
        for element in header.split(separator: ",") {
            let pair = element.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { continue }
            let key = pair[0].trimmingCharacters(in: .whitespaces)
            let value = pair[1].trimmingCharacters(in: .whitespaces)
            if key == "t", timestamp == nil, !value.isEmpty, value.count <= 12, value.allSatisfy(\.isASCIIDigit) { timestamp = value }
            if key == "v1", let bytes = SignatureEncoding.bytes(hex: value), bytes.count == 32 { signatures.append(bytes) }
        }
        guard let timestamp, !signatures.isEmpty else { return nil }
        return (timestamp, signatures)
    }

    /// Stripe signs `timestamp.body`.
    private static func stripeSignature(timestamp: String, body: [UInt8], key: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: key, message: Array(timestamp.utf8) + [UInt8(ascii: ".")] + body)
    }

    private static func stripe(_ request: NotificationRequest, key: [UInt8], tolerance: Duration, now: Date) -> NotificationVerdict {
        guard let header = request.header("Stripe-Signature") else { return .refused(.missingSignature) }
        guard let (timestamp, signatures) = stripeHeader(header), let seconds = Double(timestamp) else {
            return .refused(.malformedSignature)
        }
        let expected = stripeSignature(timestamp: timestamp, body: request.body, key: key)
        guard signatures.contains(where: { HMACSHA256.constantTimeEquals($0, expected) }) else { return .refused(.wrongSignature) }
        return isFresh(seconds, tolerance: tolerance, now: now) ? .trigger : .refused(.staleTimestamp)
    }

    // MARK: - HubSpot

    /// The escapes HubSpot's v3 documentation decodes in the URI before signing
    /// (`: / ? @ ! $ ' ( ) * , ;`); any other escape stays as sent.
    static let hubspotDecoded: Set<UInt8> = Set(":/?@!$'()*,;".utf8)

    /// The URI HubSpot called: the public URL, with the query it sent as sent.
    static func calledURI(publicURL: String, query: String?) -> String {
        publicURL + (query.map { "?" + $0 } ?? "")
    }

    /// The URI HubSpot's v3 signed: the one it called, with the documented escapes decoded.
    static func hubspotURI(publicURL: String, query: String?) -> String {
        PercentDecoding.decode(calledURI(publicURL: publicURL, query: query), only: hubspotDecoded)
    }

    /// HubSpot v3 signs the method, the URI it called, the body and the timestamp.
    private static func hubspotSignature(_ request: NotificationRequest, timestamp: String, publicURL: String, key: [UInt8]) -> [UInt8] {
        let source = request.method + hubspotURI(publicURL: publicURL, query: request.query)
        return HMACSHA256.authenticationCode(key: key, message: Array(source.utf8) + request.body + Array(timestamp.utf8))
    }

    /// HubSpot's older signatures, which its webhooks API still sends (`X-HubSpot-Signature`,
    /// hex, with `X-HubSpot-Signature-Version`): v1 is the SHA-256 of secret + body, v2 of
    /// secret + method + URI + body, the URI exactly as called. They carry no timestamp, so a
    /// replay cannot be told from a redelivery (as GitHub's and Shopify's), and a plain hash
    /// over secret + body can be extended by someone holding one signature: acceptable only
    /// because a notification is a trigger, never data, so a forged one costs one coalesced pass.
    private static func hubspotLegacy(_ request: NotificationRequest, key: [UInt8], publicURL: String?) -> NotificationVerdict {
        guard let header = request.header("X-HubSpot-Signature") else { return .refused(.missingSignature) }
        guard let sent = SignatureEncoding.bytes(hex: header), sent.count == 32 else { return .refused(.malformedSignature) }
        let source: [UInt8]
        switch request.header("X-HubSpot-Signature-Version")?.lowercased() {
        case "v1":
            source = key + request.body
        case "v2":
            guard let publicURL else { return .refused(.malformedSignature) }
            source = key + Array((request.method + calledURI(publicURL: publicURL, query: request.query)).utf8) + request.body
        default:
            return .refused(.malformedSignature)
        }
        return matches(sent, HMACSHA256.digest(source))
    }

    /// v3 when the request carries it (its signature covers a timestamp), the older version
    /// only when it does not: a v3 that fails is a refusal, never a reason to try a weaker one.
    private static func hubspot(_ request: NotificationRequest, key: [UInt8], publicURL: String?, tolerance: Duration, now: Date) -> NotificationVerdict {
        guard let header = request.header("X-HubSpot-Signature-v3") else {
            return hubspotLegacy(request, key: key, publicURL: publicURL)
        }
        guard let timestamp = request.header("X-HubSpot-Request-Timestamp") else { return .refused(.missingSignature) }
        guard let sent = SignatureEncoding.bytes(base64: header), sent.count == 32, timestamp.count <= 16,
              timestamp.allSatisfy(\.isASCIIDigit), let milliseconds = Double(timestamp), let publicURL else {
            return .refused(.malformedSignature)
        }
        guard HMACSHA256.constantTimeEquals(sent, hubspotSignature(request, timestamp: timestamp, publicURL: publicURL, key: key)) else {
            return .refused(.wrongSignature)
        }
        return isFresh(milliseconds / 1000, tolerance: tolerance, now: now) ? .trigger : .refused(.staleTimestamp)
    }

    // MARK: - Microsoft Graph

    private static func graph(_ request: NotificationRequest, clientState: [UInt8]) -> NotificationVerdict {
        // Creating or renewing a subscription: Graph posts ?validationToken=... and expects the
        // token back as text/plain within 10 seconds. It carries no clientState to check, and
        // echoing it triggers nothing.
        if let token = request.queryParameter("validationToken") {
            guard !token.isEmpty, token.utf8.count <= maxValidationToken else { return .refused(.malformedSignature) }
            return .handshake(.init(status: 200, body: token))
        }
        guard !request.body.isEmpty else { return .refused(.missingSignature) }
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
              let items = object["value"] as? [[String: Any]], !items.isEmpty else {
            return .refused(.malformedSignature)
        }
        // Every notification of the batch must carry the store's clientState: one that does
        // not was not made by the subscription this store created.
        for item in items {
            guard let state = item["clientState"] as? String else { return .refused(.missingSignature) }
            guard HMACSHA256.constantTimeEquals(Array(state.utf8), clientState) else { return .refused(.wrongSignature) }
        }
        return .trigger
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

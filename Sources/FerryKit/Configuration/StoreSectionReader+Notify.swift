/// A store's `notify*` keys:
///
/// | key                | value                                                            |
/// |--------------------|------------------------------------------------------------------|
/// | `notify`           | stripe, github, shopify, hubspot, graph, google or hmac-sha256   |
/// | `notify-secret`    | credential:NAME or file:PATH (the HMAC key, clientState, token)  |
/// | `notify-header`    | the signature header, for hmac-sha256 only                       |
/// | `notify-tolerance` | how old a signed timestamp may be (stripe, hubspot; default 5m)  |
extension StoreSectionReader {
    mutating func readNotification(_ entries: [ConfigurationSyntax.Entry], section: ConfigurationLocation) -> NotificationConfiguration? {
        guard !entries.isEmpty else { return nil }
        let names = NotificationScheme.allCases.map(\.rawValue)
        guard let schemeEntry = entries.first(where: { $0.key == "notify" }) else {
            values.problem(entries[0], "\(entries[0].key) has no effect without notify = \(names.joinedAsList(conjunction: "or"))")
            return nil
        }
        guard let scheme = NotificationScheme(rawValue: schemeEntry.value) else {
            values.problem(schemeEntry, "expected one of \(names.joinedAsList(conjunction: "or")), got '\(schemeEntry.value)'"
                           + Suggestion.hint(for: schemeEntry.value, in: names))
            return nil
        }
        guard let secretEntry = entries.first(where: { $0.key == "notify-secret" }) else {
            values.problems.append(.init(file: values.file, line: schemeEntry.line, key: "notify-secret",
                                         message: "notify = \(scheme.rawValue) needs notify-secret = credential:NAME or file:PATH "
                                             + "(\(Self.secretMeaning(scheme)))"))
            return nil
        }
        var secret: Secret?
        switch secrets.resolve(secretEntry.value) {
        case .success(let resolved): secret = resolved
        case .failure(let problem): values.problem(secretEntry, problem.message)
        }
        var header: String?
        if let entry = entries.first(where: { $0.key == "notify-header" }) {
            if scheme != .hmacSHA256 {
                values.problem(entry, "notify-header is for notify = hmac-sha256; \(scheme.rawValue) signs in a header of its own")
            } else if !ConfiguredHeaders.isFieldName(entry.value) {
                values.problem(entry, "'\(entry.value)' is not an HTTP header name")
            } else {
                header = entry.value
            }
        } else if scheme == .hmacSHA256 {
            values.problems.append(.init(file: values.file, line: schemeEntry.line, key: "notify-header",
                                         message: "notify = hmac-sha256 needs notify-header = the header the API signs in, e.g. X-Signature"))
        }
        var tolerance = Duration.seconds(300)
        if let entry = entries.first(where: { $0.key == "notify-tolerance" }) {
            if !scheme.isTimestamped {
                values.problem(entry, "notify-tolerance is for stripe and hubspot, whose signatures carry a timestamp")
            } else if let value = values.duration(entry) {
                if value > NotificationConfiguration.longestTolerance {
                    // A copied request is accepted as new for as long as this lasts, less the
                    // replay guard's memory: the APIs themselves say 5 minutes.
                    values.problem(entry, "notify-tolerance is at most 1h (Stripe and HubSpot advise 5m): a request copied off the wire passes for as long")
                } else {
                    tolerance = value
                }
            }
        }
        guard let secret, scheme != .hmacSHA256 || header != nil else { return nil }
        return NotificationConfiguration(scheme: scheme, secret: secret, header: header, tolerance: tolerance)
    }

    private static func secretMeaning(_ scheme: NotificationScheme) -> String {
        switch scheme {
        case .stripe: "the endpoint's signing secret, whsec_..."
        case .github: "the webhook's secret"
        case .shopify, .hubspot: "the app's client secret"
        case .graph: "the clientState the subscription was created with"
        case .google: "the token the channel was opened with"
        case .hmacSHA256: "the key the API signs with"
        }
    }
}

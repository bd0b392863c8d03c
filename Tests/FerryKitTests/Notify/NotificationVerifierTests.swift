import Foundation
import Testing
@testable import FerryKit

/// Every scheme as its API documents it: the documented example where the API gives one
/// (GitHub's, HubSpot's v1 and v2), otherwise a signature made by Python's hmac module from the documented recipe;
/// and each refused for a wrong secret, an old timestamp, a changed body, a missing header.
@Suite("Notification verification")
struct NotificationVerifierTests {
    static func settings(_ scheme: NotificationScheme, _ secret: String, header: String? = nil) -> NotificationConfiguration {
        NotificationConfiguration(scheme: scheme, secret: Secret(secret, source: "test"), header: header)
    }

    static func request(_ headers: [(String, String)], body: String, target: String = "/notify/s", method: String = "POST") -> NotificationRequest {
        NotificationRequest(method: method, target: target, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8))
    }

    static func verify(_ request: NotificationRequest, _ settings: NotificationConfiguration, publicURL: String? = nil,
                       now: TimeInterval = 1_492_774_600) -> NotificationVerdict {
        NotificationVerifier.verify(request, settings, publicURL: publicURL, now: Date(timeIntervalSince1970: now))
    }

    // MARK: - GitHub

    /// GitHub's documentation: secret "It's a Secret to Everybody", payload "Hello, World!".
    static let github = settings(.github, "It's a Secret to Everybody")
    static let githubSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

    @Test func github_theDocumentedExampleIsAccepted() {
        #expect(Self.verify(Self.request([("X-Hub-Signature-256", Self.githubSignature)], body: "Hello, World!"), Self.github) == .trigger)
        // Header names are case-insensitive.
        #expect(Self.verify(Self.request([("x-hub-signature-256", Self.githubSignature)], body: "Hello, World!"), Self.github) == .trigger)
    }

    @Test func github_forgeriesAreRefused() {
        #expect(Self.verify(Self.request([("X-Hub-Signature-256", Self.githubSignature)], body: "Hello, World?"), Self.github) == .refused(.wrongSignature))
        #expect(Self.verify(Self.request([("X-Hub-Signature-256", Self.githubSignature)], body: "Hello, World!"),
                            Self.settings(.github, "another secret")) == .refused(.wrongSignature))
        #expect(Self.verify(Self.request([], body: "Hello, World!"), Self.github) == .refused(.missingSignature))
        #expect(Self.verify(Self.request([("X-Hub-Signature", "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6")], body: "Hello, World!"),
                            Self.github) == .refused(.missingSignature), "the SHA-1 header is not enough")
        #expect(Self.verify(Self.request([("X-Hub-Signature-256", "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")],
                                         body: "Hello, World!"), Self.github) == .refused(.malformedSignature))
        #expect(Self.verify(Self.request([("X-Hub-Signature-256", "sha256=7571")], body: "Hello, World!"), Self.github) == .refused(.malformedSignature))
    }

    // MARK: - Stripe

    static let stripe = settings(.stripe, "whsec_test_secret")
    static let stripeBody = #"{"id":"evt_1","object":"event"}"#
    static let stripeV1 = "654b43d3508ecadb3f8cefc4bc7d3d2bdc5ba9e03bf2c89b2d0657a8e24e4543"

    @Test func stripe_aSignatureOverTimestampDotPayloadIsAccepted_amongOthers() {
        #expect(Self.verify(Self.request([("Stripe-Signature", "t=1492774577,v1=\(Self.stripeV1)")], body: Self.stripeBody), Self.stripe) == .trigger)
        // During a secret's rotation Stripe sends a v1 per secret, and a v0 test signature.
        let rotated = "t=1492774577,v1=\(String(repeating: "0", count: 64)),v1=\(Self.stripeV1),v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39"
        #expect(Self.verify(Self.request([("Stripe-Signature", rotated)], body: Self.stripeBody), Self.stripe) == .trigger)
    }

    @Test func stripe_aReplayOutsideTheToleranceIsRefused_eitherWay() {
        let header = [("Stripe-Signature", "t=1492774577,v1=\(Self.stripeV1)")]
        #expect(Self.verify(Self.request(header, body: Self.stripeBody), Self.stripe, now: 1_492_774_577 + 300) == .trigger)
        #expect(Self.verify(Self.request(header, body: Self.stripeBody), Self.stripe, now: 1_492_774_577 + 301) == .refused(.staleTimestamp))
        #expect(Self.verify(Self.request(header, body: Self.stripeBody), Self.stripe, now: 1_492_774_577 - 301) == .refused(.staleTimestamp))
    }

    @Test func stripe_forgeriesAreRefused() {
        let header = [("Stripe-Signature", "t=1492774577,v1=\(Self.stripeV1)")]
        #expect(Self.verify(Self.request(header, body: Self.stripeBody + " "), Self.stripe) == .refused(.wrongSignature))
        #expect(Self.verify(Self.request(header, body: Self.stripeBody), Self.settings(.stripe, "whsec_other")) == .refused(.wrongSignature))
        // The timestamp is signed: moving it forward to pass the tolerance breaks the signature.
        #expect(Self.verify(Self.request([("Stripe-Signature", "t=1492774599,v1=\(Self.stripeV1)")], body: Self.stripeBody), Self.stripe)
                == .refused(.wrongSignature))
        #expect(Self.verify(Self.request([], body: Self.stripeBody), Self.stripe) == .refused(.missingSignature))
        #expect(Self.verify(Self.request([("Stripe-Signature", "v1=\(Self.stripeV1)")], body: Self.stripeBody), Self.stripe) == .refused(.malformedSignature))
        #expect(Self.verify(Self.request([("Stripe-Signature", "t=1492774577,v0=\(Self.stripeV1)")], body: Self.stripeBody), Self.stripe)
                == .refused(.malformedSignature))
        #expect(Self.verify(Self.request([("Stripe-Signature", "t=abc,v1=\(Self.stripeV1)")], body: Self.stripeBody), Self.stripe) == .refused(.malformedSignature))
    }

    // MARK: - Shopify

    static let shopify = settings(.shopify, "shpss_test_secret")
    static let shopifyBody = #"{"id":820982911946154508}"#

    @Test func shopify_aBase64SignatureOfTheBodyIsAccepted_andForgeriesAreNot() {
        let header = [("X-Shopify-Hmac-Sha256", "AU5n5C4JV1EbE8g4yEzV+ZHbqkXpM29HXkzNAa5zicA=")]
        #expect(Self.verify(Self.request(header, body: Self.shopifyBody), Self.shopify) == .trigger)
        #expect(Self.verify(Self.request(header, body: #"{"id":820982911946154509}"#), Self.shopify) == .refused(.wrongSignature))
        #expect(Self.verify(Self.request(header, body: Self.shopifyBody), Self.settings(.shopify, "other")) == .refused(.wrongSignature))
        #expect(Self.verify(Self.request([], body: Self.shopifyBody), Self.shopify) == .refused(.missingSignature))
        #expect(Self.verify(Self.request([("X-Shopify-Hmac-Sha256", "not base64!")], body: Self.shopifyBody), Self.shopify) == .refused(.malformedSignature))
    }

    // MARK: - HubSpot

    static let hubspot = settings(.hubspot, "hubspot-client-secret")
    static let hubspotBody = #"[{"eventId":1,"subscriptionId":12345,"portalId":62515}]"#
    static let hubspotURL = "https://sync.example.com/ferry/notify/contacts"
    static let hubspotSignature = "/I2blPR/XCv5CTZTs0/Njqqawg106x4uaR1qQx6xEUE="

    static func hubspotRequest(signature: String = hubspotSignature, timestamp: String = "1700000000000", body: String = hubspotBody,
                               method: String = "POST") -> NotificationRequest {
        // Sent with `:` escaped, which HubSpot's recipe decodes before signing.
        request([("X-HubSpot-Signature-v3", signature), ("X-HubSpot-Request-Timestamp", timestamp)], body: body,
                target: "/notify/contacts?portal=62515&next=a%3Ab", method: method)
    }

    @Test func hubspot_methodURIBodyAndTimestampAreSigned() {
        let now: TimeInterval = 1_700_000_100
        #expect(Self.verify(Self.hubspotRequest(), Self.hubspot, publicURL: Self.hubspotURL, now: now) == .trigger)
        #expect(Self.verify(Self.hubspotRequest(), Self.hubspot, publicURL: Self.hubspotURL + "x", now: now) == .refused(.wrongSignature))
        #expect(Self.verify(Self.hubspotRequest(method: "PUT"), Self.hubspot, publicURL: Self.hubspotURL, now: now) == .refused(.wrongSignature))
        #expect(Self.verify(Self.hubspotRequest(body: Self.hubspotBody + " "), Self.hubspot, publicURL: Self.hubspotURL, now: now) == .refused(.wrongSignature))
        #expect(Self.verify(Self.hubspotRequest(timestamp: "1700000000001"), Self.hubspot, publicURL: Self.hubspotURL, now: now) == .refused(.wrongSignature))
        #expect(Self.verify(Self.hubspotRequest(), Self.settings(.hubspot, "other"), publicURL: Self.hubspotURL, now: now) == .refused(.wrongSignature))
    }

    @Test func hubspot_olderThanFiveMinutesIsRefused() {
        #expect(Self.verify(Self.hubspotRequest(), Self.hubspot, publicURL: Self.hubspotURL, now: 1_700_000_300) == .trigger)
        #expect(Self.verify(Self.hubspotRequest(), Self.hubspot, publicURL: Self.hubspotURL, now: 1_700_000_301) == .refused(.staleTimestamp))
    }

    @Test func hubspot_missingOrMalformedHeadersAreRefused() {
        let missing = Self.request([("X-HubSpot-Signature-v3", Self.hubspotSignature)], body: Self.hubspotBody)
        #expect(Self.verify(missing, Self.hubspot, publicURL: Self.hubspotURL) == .refused(.missingSignature))
        #expect(Self.verify(Self.hubspotRequest(timestamp: "soon"), Self.hubspot, publicURL: Self.hubspotURL) == .refused(.malformedSignature))
        #expect(Self.verify(Self.hubspotRequest(signature: "***"), Self.hubspot, publicURL: Self.hubspotURL) == .refused(.malformedSignature))
    }

    // HubSpot's v1 and v2 pages give an example each, secret and all: the hashes below are
    // theirs, not ours.
    static let hubspotDocumentedSecret = settings(.hubspot, "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy")
    static let hubspotDocumentedBody = #"[{"eventId":1,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600000,"subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,"changeSource":"CRM","changeFlag":"NEW","appId":54321}]"#
    static let hubspotV1 = "232db2615f3d666fe21a8ec971ac7b5402d33b9a925784df3ca654d05f4817de"
    static let hubspotV2 = "eee2dddcc73c94d699f5e395f4b9d454a069a6855fbfa152e91e88823087200e"

    static func hubspotLegacyRequest(_ version: String, _ signature: String, body: String, method: String = "POST") -> NotificationRequest {
        request([("X-HubSpot-Signature", signature), ("X-HubSpot-Signature-Version", version)], body: body, target: "/notify/contacts", method: method)
    }

    @Test func hubspot_theDocumentedV1ExampleIsAccepted_andForgeriesAreNot() {
        let secret = Self.hubspotDocumentedSecret
        #expect(Self.verify(Self.hubspotLegacyRequest("v1", Self.hubspotV1, body: Self.hubspotDocumentedBody), secret) == .trigger)
        #expect(Self.verify(Self.hubspotLegacyRequest("v1", Self.hubspotV1.uppercased(), body: Self.hubspotDocumentedBody), secret) == .trigger)
        #expect(Self.verify(Self.hubspotLegacyRequest("v1", Self.hubspotV1, body: Self.hubspotDocumentedBody + " "), secret) == .refused(.wrongSignature))
        #expect(Self.verify(Self.hubspotLegacyRequest("v1", Self.hubspotV1, body: Self.hubspotDocumentedBody), Self.hubspot) == .refused(.wrongSignature))
        #expect(Self.verify(Self.hubspotLegacyRequest("v2", Self.hubspotV1, body: Self.hubspotDocumentedBody), secret,
                            publicURL: "https://www.example.com/webhook_uri") == .refused(.wrongSignature), "v1's hash is not v2's")
        #expect(Self.verify(Self.hubspotLegacyRequest("v9", Self.hubspotV1, body: Self.hubspotDocumentedBody), secret) == .refused(.malformedSignature))
        #expect(Self.verify(Self.request([("X-HubSpot-Signature", Self.hubspotV1)], body: Self.hubspotDocumentedBody), secret)
                == .refused(.malformedSignature), "a signature without its version")
        #expect(Self.verify(Self.hubspotLegacyRequest("v1", "/I2blPR/XCv5", body: Self.hubspotDocumentedBody), secret) == .refused(.malformedSignature))
    }

    @Test func hubspot_theDocumentedV2ExampleIsAccepted_theURIExactlyAsCalled() {
        let secret = Self.hubspotDocumentedSecret
        let url = "https://www.example.com/webhook_uri"
        #expect(Self.verify(Self.hubspotLegacyRequest("v2", Self.hubspotV2, body: "", method: "GET"), secret, publicURL: url) == .trigger)
        #expect(Self.verify(Self.hubspotLegacyRequest("v2", Self.hubspotV2, body: "", method: "POST"), secret, publicURL: url) == .refused(.wrongSignature))
        #expect(Self.verify(Self.hubspotLegacyRequest("v2", Self.hubspotV2, body: "", method: "GET"), secret,
                            publicURL: "http://www.example.com/webhook_uri") == .refused(.wrongSignature), "the protocol is signed")
        #expect(Self.verify(Self.hubspotLegacyRequest("v2", Self.hubspotV2, body: "", method: "GET"), secret) == .refused(.malformedSignature),
                "without the public URL there is nothing to check v2 against")
    }

    @Test func hubspot_aRequestCarryingV3IsJudgedByV3Alone() {
        // A correct v1 beside a wrong v3 is refused: a failed v3 is never a reason to try a weaker one.
        let both = Self.request([("X-HubSpot-Signature-v3", Self.hubspotSignature), ("X-HubSpot-Request-Timestamp", "1700000000000"),
                                 ("X-HubSpot-Signature", Self.hubspotV1), ("X-HubSpot-Signature-Version", "v1")],
                                body: Self.hubspotDocumentedBody, target: "/notify/contacts")
        #expect(Self.verify(both, Self.hubspotDocumentedSecret, publicURL: Self.hubspotURL, now: 1_700_000_100) == .refused(.wrongSignature))
        // Only v3 is remembered against replays: v1 and v2 sign no timestamp.
        #expect(NotificationVerifier.replayStamp(of: Self.hubspotLegacyRequest("v1", Self.hubspotV1, body: Self.hubspotDocumentedBody),
                                                 Self.hubspotDocumentedSecret, publicURL: Self.hubspotURL) == nil)
        #expect(NotificationVerifier.replayStamp(of: Self.hubspotRequest(), Self.hubspot, publicURL: Self.hubspotURL) != nil)
    }

    @Test func hubspot_decodesOnlyTheDocumentedEscapes() {
        #expect(NotificationVerifier.hubspotURI(publicURL: "https://h/p", query: "a=%3A%2F%3F%40%21%24%27%28%29%2A%2C%3B&b=%20%26")
                == "https://h/p?a=:/?@!$'()*,;&b=%20%26")
    }

    // MARK: - Microsoft Graph

    static let graph = settings(.graph, "client-state-secret")

    @Test func graph_theValidationTokenIsEchoedAsPlainText_andTriggersNothing() {
        let validation = Self.request([], body: "", target: "/notify/s?validationToken=Validation%3A%20Testing%20client%20application%20reachability")
        #expect(Self.verify(validation, Self.graph) == .handshake(.init(status: 200, body: "Validation: Testing client application reachability")))
        let long = Self.request([], body: "", target: "/notify/s?validationToken=" + String(repeating: "x", count: 2000))
        #expect(Self.verify(long, Self.graph) == .refused(.malformedSignature))
    }

    @Test func graph_everyNotificationMustCarryTheClientState() {
        func batch(_ states: [String?]) -> NotificationRequest {
            let items = states.map { state in
                "{\"subscriptionId\":\"7f105c7d\",\"changeType\":\"updated\",\"resource\":\"Users/x/Events/y\"" + (state.map { ",\"clientState\":\"\($0)\"" } ?? "") + "}"
            }
            return Self.request([("Content-Type", "application/json")], body: "{\"value\":[\(items.joined(separator: ","))]}")
        }
        #expect(Self.verify(batch(["client-state-secret"]), Self.graph) == .trigger)
        #expect(Self.verify(batch(["client-state-secret", "client-state-secret"]), Self.graph) == .trigger)
        #expect(Self.verify(batch(["client-state-secret", "guess"]), Self.graph) == .refused(.wrongSignature))
        #expect(Self.verify(batch([nil]), Self.graph) == .refused(.missingSignature))
        #expect(Self.verify(Self.request([], body: "{\"value\":[]}"), Self.graph) == .refused(.malformedSignature))
        #expect(Self.verify(Self.request([], body: "not json"), Self.graph) == .refused(.malformedSignature))
        #expect(Self.verify(Self.request([], body: ""), Self.graph) == .refused(.missingSignature))
    }

    // MARK: - Google

    static let google = settings(.google, "channel-token")

    @Test func google_theChannelTokenIsChecked_andSyncIsTheHandshake() {
        func notice(_ token: String?, state: String) -> NotificationRequest {
            Self.request([("X-Goog-Channel-ID", "01234567-89ab"), ("X-Goog-Resource-State", state)] + (token.map { [("X-Goog-Channel-Token", $0)] } ?? []),
                         body: "")
        }
        #expect(Self.verify(notice("channel-token", state: "exists"), Self.google) == .trigger)
        #expect(Self.verify(notice("channel-token", state: "not_exists"), Self.google) == .trigger)
        #expect(Self.verify(notice("channel-token", state: "sync"), Self.google) == .handshake(.init(status: 200, body: "")))
        #expect(Self.verify(notice("channel-tokeN", state: "exists"), Self.google) == .refused(.wrongSignature))
        #expect(Self.verify(notice(nil, state: "exists"), Self.google) == .refused(.missingSignature))
    }

    // MARK: - Any API's HMAC-SHA256

    @Test(arguments: [
        "a2d1cd2b4a95f76dc351fe467c45a77f52cb5ceabc15392493dcadbe772bc92c",
        "sha256=a2d1cd2b4a95f76dc351fe467c45a77f52cb5ceabc15392493dcadbe772bc92c",
        "A2D1CD2B4A95F76DC351FE467C45A77F52CB5CEABC15392493DCADBE772BC92C",
        "otHNK0qV923DUf5GfEWnf1LLXOq8FTkkk9ytvncrySw=",
    ])
    func hmacSHA256_hexOrBase64InTheConfiguredHeader(_ signature: String) {
        let settings = Self.settings(.hmacSHA256, "generic-secret", header: "X-Signature")
        #expect(Self.verify(Self.request([("X-Signature", signature)], body: "payload"), settings) == .trigger)
        #expect(Self.verify(Self.request([("X-Signature", signature)], body: "payload!"), settings) == .refused(.wrongSignature))
        #expect(Self.verify(Self.request([("X-Other", signature)], body: "payload"), settings) == .refused(.missingSignature))
    }

    @Test func refusalsAnswer401WithoutCredentialsAnd403WithWrongOnes_sayingNothingMore() {
        #expect(NotificationDesk.answer(.refused(.missingSignature)).status == 401)
        for refusal in [NotificationRefusal.wrongSignature, .staleTimestamp, .malformedSignature] {
            let answer = NotificationDesk.answer(.refused(refusal))
            #expect(answer.status == 403)
            #expect(answer.body == "forbidden\n")
        }
        #expect(NotificationDesk.answer(.trigger).status == 202)
    }
}

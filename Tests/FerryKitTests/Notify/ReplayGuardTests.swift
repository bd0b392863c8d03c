import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// A signed notification copied and sent again within its tolerance is refused; the API's
/// own retries, signed anew, are not; and what is remembered stays bounded.
@Suite("Notification replays")
struct ReplayGuardTests {
    static func stamp(_ text: String, expires: TimeInterval) -> ReplayStamp {
        ReplayStamp(signature: Array(text.utf8), expires: Date(timeIntervalSince1970: expires))
    }

    @Test func aStampIsAdmittedOnce_untilItExpires() {
        var replays = ReplayGuard()
        let now = Date(timeIntervalSince1970: 1_000)
        let first = replays.admit(Self.stamp("a", expires: 1_300), now: now)
        let copy = replays.admit(Self.stamp("a", expires: 1_300), now: now.addingTimeInterval(299))
        let other = replays.admit(Self.stamp("b", expires: 1_300), now: now)
        let afterExpiry = replays.admit(Self.stamp("a", expires: 1_700), now: now.addingTimeInterval(301))
        #expect(first)
        #expect(!copy, "a copy within the tolerance")
        #expect(other, "another signature")
        #expect(afterExpiry, "expired: forgotten")
        #expect(replays.count == 1, "b expired too and was pruned")
    }

    @Test func whatIsRememberedStaysWithinTheCapacity_oldestFirstOut() {
        var replays = ReplayGuard(capacity: 100)
        let now = Date(timeIntervalSince1970: 1_000)
        for index in 0..<10_000 {
            let admitted = replays.admit(Self.stamp("s\(index)", expires: 2_000), now: now)
            #expect(admitted)
            #expect(replays.count <= 100)
        }
        let newest = replays.admit(Self.stamp("s9999", expires: 2_000), now: now)
        let oldest = replays.admit(Self.stamp("s0", expires: 2_000), now: now)
        #expect(!newest, "the newest are kept")
        #expect(oldest, "the oldest were let go")
    }

    /// Through the store's desk, with the verifier: Stripe's request accepted, its copy
    /// refused as a replay, the API's retry (a new timestamp, signed again) accepted; a
    /// forgery is never remembered, so it cannot crowd out the real ones.
    @Test func theDeskRefusesACopyOfAVerifiedStripeNotification() throws {
        let configuration = try NotificationConfigurationTests.load("notify = stripe\nnotify-secret = file:hook.secret").get()
        let desk = NotificationDesk()
        desk.configure(configuration)
        let body = #"{"id":"evt_1","object":"event"}"#
        func request(at timestamp: Int, secret: String = "s3cret", reformatted: Bool = false) -> NotificationRequest {
            let signature = HMACSHA256.authenticationCode(key: Array(secret.utf8), message: Array("\(timestamp).\(body)".utf8))
            let hex = signature.map { String(format: "%02x", $0) }.joined()
            let header = reformatted ? "v0=abc, t=\(timestamp), v1=\(hex)" : "t=\(timestamp),v1=\(hex)"
            return NotificationRequest(method: "POST", target: "/notify/orders", headers: [(name: "Stripe-Signature", value: header)],
                                       body: Array(body.utf8))
        }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(desk.verify(request(at: 1_800_000_000), store: "orders", now: now) == .trigger)
        #expect(desk.verify(request(at: 1_800_000_000), store: "orders", now: now.addingTimeInterval(60)) == .refused(.replayed))
        #expect(desk.verify(request(at: 1_800_000_000, reformatted: true), store: "orders", now: now.addingTimeInterval(61)) == .refused(.replayed),
                "a copy with its header reformatted verifies, and is still a copy")
        #expect(desk.verify(request(at: 1_800_000_030), store: "orders", now: now.addingTimeInterval(60)) == .trigger, "Stripe's retry")
        #expect(desk.verify(request(at: 1_800_000_040, secret: "other"), store: "orders", now: now.addingTimeInterval(60)) == .refused(.wrongSignature))
        #expect(desk.verify(request(at: 1_800_000_000), store: "orders", now: now.addingTimeInterval(301)) == .refused(.staleTimestamp))
        // A reload keeps what the store accepted.
        desk.configure(configuration)
        #expect(desk.verify(request(at: 1_800_000_030), store: "orders", now: now.addingTimeInterval(90)) == .refused(.replayed))
    }
}

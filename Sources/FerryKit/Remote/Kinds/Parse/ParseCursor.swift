import Foundation

/// A Parse pass's position: the (updatedAt, objectId) of the last committed record.
///
/// Stored as `{"updatedAt":"2024-05-01T12:00:00.000Z","objectId":"abc"}`. Parse renders every
/// `updatedAt` in one ISO-8601 UTC form with milliseconds, so the pair orders as strings.
public struct ParseCursor: Sendable, Equatable, Comparable {
    public var updatedAt: String
    public var objectId: String

    public init(updatedAt: String, objectId: String) {
        self.updatedAt = updatedAt
        self.objectId = objectId
    }

    /// Reads a stored cursor; nil when it is not one of ours.
    public init?(stored: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any],
              let updatedAt = object["updatedAt"] as? String, let objectId = object["objectId"] as? String else { return nil }
        self.init(updatedAt: updatedAt, objectId: objectId)
    }

    public var stored: String {
        let data = try? JSONSerialization.data(withJSONObject: ["updatedAt": updatedAt, "objectId": objectId], options: [.sortedKeys])
        return String(decoding: data ?? Data(), as: UTF8.self)
    }

    public static func < (lhs: ParseCursor, rhs: ParseCursor) -> Bool {
        (lhs.updatedAt, lhs.objectId) < (rhs.updatedAt, rhs.objectId)
    }
}

import CSQLite
import Foundation

/// A replica database failure, naming the database file, the store and the record involved.
///
/// Pattern-match on ``kind``: `catch StoreError.Kind.full { ... }`. ``description`` is one line;
/// it never contains record bodies, bound values or secrets.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The disk (or the file system holding the replica) is full. Retry once space is back.
        case full
        /// The file or its directory cannot be written.
        case readOnly
        /// Another process holds the write lock longer than the busy timeout.
        case busy
        /// The file is damaged (`quick_check` failed, or SQLite reported corruption).
        case corrupt
        /// The file exists but is not a Ferry replica (another SQLite file, or not SQLite at all).
        case notFerryDatabase
        /// Written by a newer Ferry: this binary will not touch it.
        case newerSchema(found: Int, supported: Int)
        /// Older than this binary and opened read-only, so it cannot be migrated; start `ferryd`
        /// (which migrates on open) first.
        case outdatedSchema(found: Int, supported: Int)
        /// A record cannot be stored and the store's policy is `fail`.
        case badRecord
        /// An I/O error other than a full disk.
        case io
        case other
    }

    public var kind: Kind
    /// The replica file.
    public var path: String
    public var store: String?
    public var recordID: String?
    /// Position of the record in its batch, for records without a usable id.
    public var position: Int?
    /// SQLite's extended result code, when SQLite reported the failure.
    public var sqliteCode: Int32?
    public var message: String

    public init(_ kind: Kind, path: String, store: String? = nil, recordID: String? = nil, position: Int? = nil, sqliteCode: Int32? = nil, message: String) {
        self.kind = kind
        self.path = path
        self.store = store
        self.recordID = recordID
        self.position = position
        self.sqliteCode = sqliteCode
        self.message = message
    }

    /// Classifies a SQLite failure. `ENOSPC` can surface as an I/O error (e.g. while growing the
    /// WAL index) rather than `SQLITE_FULL`; both are a full disk to an admin.
    init(_ error: SQLiteError, path: String, store: String? = nil, recordID: String? = nil) {
        let kind: Kind
        switch error.primaryCode {
        case SQLITE_FULL: kind = .full
        case SQLITE_IOERR where error.systemErrno == ENOSPC: kind = .full
        // A file system remounted read-only under an open database fails writes as I/O errors.
        // errno is often 0 by then (the kernel reports EIO on a later fsync), so the daemon also
        // probes the volume (ReplicaVolume) before it tells an admin what is wrong.
        case SQLITE_IOERR where error.systemErrno == EROFS: kind = .readOnly
        case SQLITE_IOERR: kind = .io
        case SQLITE_READONLY, SQLITE_PERM: kind = .readOnly
        case SQLITE_CANTOPEN where error.systemErrno == EACCES || error.systemErrno == EROFS: kind = .readOnly
        case SQLITE_BUSY, SQLITE_LOCKED: kind = .busy
        case SQLITE_CORRUPT: kind = .corrupt
        case SQLITE_NOTADB: kind = .notFerryDatabase
        default: kind = .other
        }
        var message = error.message
        if error.systemErrno != 0 { message += " (errno \(error.systemErrno): \(String(cString: strerror(error.systemErrno))))" }
        // Which statement met a full disk says nothing a person can act on.
        if let sql = error.sql, kind != .full { message += " in `\(sql.prefix(120))`" }
        self.init(kind, path: path, store: store, recordID: recordID, sqliteCode: error.extendedCode, message: message)
    }

    public var description: String {
        var text = "replica \(path)"
        if let store { text += ", store \(store)" }
        if let recordID { text += ", record \(recordID.debugDescription)" }
        if let position { text += " at position \(position)" }
        text += ": \(message)"
        if kind == .full {
            // What to do, where: the directory's file system, not SQLite's code.
            let directory = (path as NSString).deletingLastPathComponent
            return text + "; free space on the file system that holds \(directory.isEmpty ? "." : directory) (df -h \(directory.isEmpty ? "." : directory))"
        }
        if let sqliteCode { text += " [SQLite \(sqliteCode)]" }
        return text
    }
}

extension StoreError.Kind {
    /// Whether a later attempt may succeed without anyone repairing the file: space or write
    /// access may come back, a lock is released; a damaged or foreign file stays so.
    public var isTransient: Bool {
        switch self {
        case .full, .readOnly, .busy, .io, .other: true
        case .corrupt, .notFerryDatabase, .newerSchema, .outdatedSchema, .badRecord: false
        }
    }

    /// A few words for STATUS= and `ferry status`.
    public var summary: String {
        switch self {
        case .full: "replica disk is full"
        case .readOnly: "replica is read-only"
        case .busy: "replica locked by another writer"
        case .corrupt: "replica is damaged"
        case .notFerryDatabase: "replica file is not Ferry's"
        case .newerSchema: "replica written by a newer Ferry"
        case .outdatedSchema: "replica needs migrating (start ferryd)"
        case .badRecord: "bad record"
        case .io: "replica I/O error"
        case .other: "database error"
        }
    }

    /// Lets `catch StoreError.Kind.full` match a thrown ``StoreError``.
    public static func ~= (pattern: StoreError.Kind, value: any Error) -> Bool {
        (value as? StoreError)?.kind == pattern
    }
}

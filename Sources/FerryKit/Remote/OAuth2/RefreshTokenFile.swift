import Foundation

/// A store's refresh token as Ferry keeps it between runs, when it is not (or no longer) the
/// one in the configuration: one the server rotated, or one `ferry auth` obtained.
///
/// One small JSON file per store that configures OAuth2, `oauth2-tokens/STORE.json` beside the
/// replica, mode 0600 in a 0700 directory: the replica's readers (its group) cannot read it.
/// It is replaced atomically and durably (``AtomicFile``): a crash at any instant leaves the
/// old token or the new one, so a token the server has just rotated is on disk before any
/// request uses the access token that came with it.
///
/// Which token a refresh sends: this file's, while it was obtained from the refresh token the
/// configuration names now (its `seed`: a fingerprint, never the token); the configuration's,
/// when an admin has put a new one there since (after a re-authorisation by other means), or
/// when there is no file. The file also names the token endpoint and the client: a token is
/// never sent to another endpoint or for another client than the one that issued it.
struct RefreshTokenFile: Sendable {
    struct Saved: Codable, Sendable, Equatable {
        var refreshToken: String
        /// ``RefreshTokenFile/fingerprint(_:)`` of the configured refresh token it supersedes;
        /// nil when the configuration named none.
        var seed: String?
        var tokenURL: String
        var clientID: String
        var saved: Date

        enum CodingKeys: String, CodingKey {
            case refreshToken = "refresh_token", seed, tokenURL = "token_url", clientID = "client_id", saved
        }
    }

    /// Why the file cannot be used; names the path, never the content.
    struct ReadError: Error, Sendable, Equatable, CustomStringConvertible {
        let path: String
        let detail: String
        var description: String { "cannot use the saved refresh token \(path): \(detail)" }
    }

    let path: String
    /// Who must own the file and its directory: root (`sudo ferry auth`, `sudo ferry sync` of a
    /// store whose server rotates refresh tokens) writes for the service's user, the owner of
    /// the replica's directory, or the service could no longer read the token that replaced
    /// the one root's refresh revoked. Nil: whoever writes.
    var owner: (user: uid_t, group: gid_t)?

    /// The file of `store` among the tokens kept beside the replica at `databasePath`.
    init(databasePath: String, store: String) {
        let replicaDirectory = (databasePath as NSString).deletingLastPathComponent
        let directory = (replicaDirectory as NSString).appendingPathComponent("oauth2-tokens")
        path = (directory as NSString).appendingPathComponent("\(store).json")
        if geteuid() == 0 {
            var info = stat()
            if stat(replicaDirectory.isEmpty ? "." : replicaDirectory, &info) == 0, info.st_uid != 0 { owner = (info.st_uid, info.st_gid) }
        }
    }

    var directory: String { (path as NSString).deletingLastPathComponent }

    /// The saved token for `grant`; nil when there is none, or it belongs to another
    /// endpoint or client.
    func load(for grant: OAuth2Grant) -> Result<Saved?, ReadError> {
        guard let data = FileManager.default.contents(atPath: path) else {
            if FileManager.default.fileExists(atPath: path) {
                return .failure(ReadError(path: path, detail: "permission denied (it must be readable by the user ferryd runs as)"))
            }
            return .success(nil)
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let saved = try? decoder.decode(Saved.self, from: data), !saved.refreshToken.isEmpty else {
            return .failure(ReadError(path: path, detail: "not a saved refresh token; remove it and run ferry auth \(grant.owner)"))
        }
        guard saved.tokenURL == grant.tokenURL, saved.clientID == grant.clientID else { return .success(nil) }
        return .success(saved)
    }

    /// Saves `token` durably. `seedFingerprint`: the fingerprint of the configured refresh
    /// token it supersedes (nil when the configuration names none).
    func save(_ token: String, grant: OAuth2Grant, seedFingerprint: String?) throws(AtomicFile.WriteError) {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw AtomicFile.WriteError(operation: "create", path: directory, errno: errno)
        }
        if let owner, chown(directory, owner.user, owner.group) != 0 {
            throw AtomicFile.WriteError(operation: "chown", path: directory, errno: errno)
        }
        let saved = Saved(refreshToken: token, seed: seedFingerprint, tokenURL: grant.tokenURL, clientID: grant.clientID,
                          saved: Date())
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        // Encoding a struct of strings and a date cannot fail.
        let data = (try? encoder.encode(saved)) ?? Data()
        try AtomicFile.write(data + Data("\n".utf8), to: path, mode: 0o600, owner: owner, durable: true)
    }

    /// 64-bit FNV-1a of a token, in hex: enough to tell whether the configured token changed,
    /// and says nothing usable about a random token.
    static func fingerprint(_ token: String) -> String {
        String(FNV1a.hash(token.utf8), radix: 16)
    }
}

import Foundation

extension ReplicaDatabase {
    /// What a store's rows were synced from (``StoreConfiguration/identity``), as its last
    /// successful pass recorded it; nil before one did.
    public func storeIdentity(of store: String) throws(StoreError) -> String? {
        do {
            let read = try connection.prepare("SELECT value FROM ferry_meta WHERE key = ?1")
            try read.bind("identity." + store, at: 1)
            defer { read.reset() }
            return try read.step() ? read.string(at: 0) : nil
        } catch { throw StoreError(error, path: path, store: store) }
    }

    /// Records what a successful pass synced the store from.
    public func recordStoreIdentity(_ identity: String, of store: String) throws(StoreError) {
        requireWritable()
        do {
            let write = try connection.prepare("INSERT INTO ferry_meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            try write.bind("identity." + store, at: 1)
            try write.bind(identity, at: 2)
            try write.run()
        } catch { throw StoreError(error, path: path, store: store) }
    }
}

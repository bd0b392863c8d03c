/// Where a store's reconciliation stands; absent from the dictionary means idle.
enum ReconciliationState {
    /// Between begin and finish/cancel: ids of the remote listing go into the connection's
    /// TEMP table `ferry_present` under the store's id (on disk, so memory does not grow with
    /// the store).
    case marking(storeID: Int64, mark: Statement)

    /// The ids marked for a store so far, as a subquery.
    static func present(_ storeID: Int64) -> String {
        "SELECT id FROM temp.ferry_present WHERE store_id = \(storeID)"
    }
}

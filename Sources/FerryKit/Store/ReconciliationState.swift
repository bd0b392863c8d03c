/// Where a store's reconciliation stands; absent from the dictionary means idle.
enum ReconciliationState {
    /// Between begin and finish/cancel: ids of the remote listing go into `table` (a TEMP
    /// table on disk, so memory does not grow with the store).
    case marking(table: String, mark: Statement)
}

extension StoreKind {
    /// Every kind Ferry speaks, in the order `ferry check-config` names them. Adding a kind is
    /// its folder under `Remote/Kinds/` plus one entry here.
    public static let registered: [StoreKind] = [.parse, .json, .carddav, .caldav, .davAccount]
}

/// Ferry's version, shown by `--version`, in the user agent and in the journal.
public enum FerryVersion {
    public static let current = "0.3.0"
}

import FerryTestSupport
import Testing

/// Parametrised suites name each case by its server ("radicale"), not the enum's full path.
extension DAVServer.Kind: CustomTestStringConvertible {
    public var testDescription: String { rawValue }
}

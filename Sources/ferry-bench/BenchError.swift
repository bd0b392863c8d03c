/// Why the benchmark could not measure something.
enum BenchError: Error, CustomStringConvertible {
    case serverDidNotStart(String)
    case curlFailed(String)
    case transferFailed(String)

    var description: String {
        switch self {
        case .serverDidNotStart(let why): "server did not start: \(why)"
        case .curlFailed(let why): "curl failed: \(why)"
        case .transferFailed(let why): "transfer failed: \(why)"
        }
    }
}

import Foundation

/// What the metrics listener answers to a request head, as a pure function its tests read as
/// a table:
///
/// | request                         | answer                                     |
/// |---------------------------------|--------------------------------------------|
/// | `GET /metrics` (any query)      | 200, the exposition                        |
/// | `HEAD /metrics`                 | 200, headers only                          |
/// | `GET /`                         | 200, a line pointing at /metrics           |
/// | another path                    | 404                                        |
/// | another method                  | 405 with `Allow: GET, HEAD`                |
/// | not an HTTP/1.x request line    | 400                                        |
///
/// Every answer closes the connection and says how long its body is.
enum MetricsRequest {
    static func respond(to head: String, render: () -> String) -> String {
        let requestLine = head.split(separator: "\r\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else {
            return response(400, "Bad Request", body: "not an HTTP/1.x request\n")
        }
        let method = parts[0]
        let path = parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard method == "GET" || method == "HEAD" else {
            return response(405, "Method Not Allowed", body: "only GET and HEAD\n", extraHeaders: ["Allow: GET, HEAD"])
        }
        let headOnly = method == "HEAD"
        switch path {
        case "/metrics":
            return response(200, "OK", body: render(), contentType: PrometheusExposition.contentType, headOnly: headOnly)
        case "/":
            return response(200, "OK", body: "ferryd \(FerryVersion.current): metrics at /metrics\n", headOnly: headOnly)
        default:
            return response(404, "Not Found", body: "no such page: metrics are at /metrics\n", headOnly: headOnly)
        }
    }

    static func response(_ status: Int, _ reason: String, body: String, contentType: String = "text/plain; charset=utf-8",
                         extraHeaders: [String] = [], headOnly: Bool = false) -> String {
        var lines = ["HTTP/1.1 \(status) \(reason)", "Content-Type: \(contentType)", "Content-Length: \(body.utf8.count)", "Connection: close"]
        lines += extraHeaders
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (headOnly ? "" : body)
    }
}

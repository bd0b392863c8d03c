import Foundation

/// Where a Parse store's requests go and the headers they carry, for its source and its writer.
struct ParseEndpoint {
    /// `{mount}/classes/{Class}`.
    let classURL: String
    /// The app id and key, the store's configured headers, `Accept: application/json`.
    let headers: HTTPHeaders

    init(store: StoreConfiguration, options: ParseOptions) {
        classURL = store.url.trimmingTrailingSlashes + "/classes/" + URLQuery.encode(options.className)
        batchURL = store.url.trimmingTrailingSlashes + "/batch"
        var headers = HTTPHeaders()
        headers.setCredential("X-Parse-Application-Id", options.applicationID)
        switch options.key {
        case .master(let key): headers.setCredential("X-Parse-Master-Key", key.value)
        case .restAPI(let key): headers.setCredential("X-Parse-REST-API-Key", key.value)
        }
        headers.set("Accept", "application/json")
        store.headers.apply(to: &headers)
        self.headers = headers
    }

    func objectURL(_ id: String) -> String { classURL + "/" + URLQuery.encode(id) }

    /// The objects with these ids, in one query (`where={"objectId":{"$in":[...]}}`).
    func objectsURL(_ ids: [String]) -> String { Self.objectsURL(classURL: classURL, ids) }

    static func objectsURL(classURL: String, _ ids: [String]) -> String {
        let condition = #"{"objectId":{"$in":["# + ids.map(JSONText.quoted).joined(separator: ",") + "]}}"
        return classURL + "?where=" + URLQuery.encode(condition) + "&limit=\(ids.count)"
    }

    /// `{mount}/batch`: up to ``batchLimit`` writes in one request.
    let batchURL: String
    /// Parse Server's limit on the requests of one batch.
    static let batchLimit = 50

    /// The path a batched request names: the class URL's path, and the object's.
    func batchPath(_ id: String?) -> String {
        let path = URLComponents(string: classURL)?.percentEncodedPath ?? "/classes"
        return id.map { path + "/" + URLQuery.encode($0) } ?? path
    }

    func request(_ method: String, _ url: String, json body: Data? = nil) -> HTTPRequest {
        var headers = headers
        if body != nil { headers.set("Content-Type", "application/json") }
        return HTTPRequest(method: method, url: url, headers: headers, body: body)
    }
}

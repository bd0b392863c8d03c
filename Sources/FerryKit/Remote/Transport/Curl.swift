import CCurl
import Foundation

/// The one place where libcurl's return codes become Swift errors or traps.
enum Curl {
    /// Makes sure `curl_global_init` ran once, before any handle exists (it is not thread-safe,
    /// and a Swift `static let` initializer runs exactly once).
    static let initialized: Void = {
        let code = curl_global_init(Int(CURL_GLOBAL_ALL))
        precondition(code == CURLE_OK, "curl_global_init failed: \(code.rawValue)")
    }()

    /// Turns an easy-interface code into a `CurlError`; codes that mean Ferry misused libcurl trap.
    static func check(_ code: CURLcode, _ function: StaticString = #function) throws(CurlError) {
        switch code {
        case CURLE_OK:
            return
        case CURLE_BAD_FUNCTION_ARGUMENT, CURLE_UNKNOWN_OPTION, CURLE_FAILED_INIT:
            preconditionFailure("libcurl misuse in \(function): \(CurlError(code))")
        default:
            throw CurlError(code)
        }
    }

    /// Multi-interface codes: every failure there is a bug in Ferry or an exhausted process
    /// (out of memory, out of descriptors), neither of which the I/O thread can recover from.
    static func checkMulti(_ code: CURLMcode, _ function: StaticString = #function) {
        guard code == CURLM_OK || code == CURLM_CALL_MULTI_PERFORM else {
            preconditionFailure("libcurl multi failure in \(function): \(String(cString: curl_multi_strerror(code)))")
        }
    }

    static func setopt(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Int) throws(CurlError) {
        try check(ferry_curl_setopt_long(handle, option, value))
    }

    static func setopt(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Bool) throws(CurlError) {
        try check(ferry_curl_setopt_long(handle, option, value ? 1 : 0))
    }

    static func setopt(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, large value: Int64) throws(CurlError) {
        try check(ferry_curl_setopt_off(handle, option, curl_off_t(value)))
    }

    /// libcurl copies string options, so the Swift string only has to live for the call.
    static func setopt(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: String) throws(CurlError) {
        let code = value.withCString { ferry_curl_setopt_string(handle, option, $0) }
        try check(code)
    }

    static func info(_ handle: UnsafeMutableRawPointer, long info: CURLINFO) -> Int {
        var value = 0
        _ = ferry_curl_getinfo_long(handle, info, &value)
        return value
    }

    static func info(_ handle: UnsafeMutableRawPointer, offset info: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        _ = ferry_curl_getinfo_off(handle, info, &value)
        return Int64(value)
    }

    static func info(_ handle: UnsafeMutableRawPointer, string info: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard ferry_curl_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// The version line of the linked libcurl, for `--version` and the benchmark header.
    static var version: String {
        String(cString: curl_version())
    }
}

import FerryKit
import FerryTestSupport
import Foundation
import Testing

/// Crashes the libFuzzer target `multistatus` found, fixed in MultistatusParser.
///
/// Each crash runs in an exit test (a child process): a segfault in the parser must not take
/// the whole test run down with it.
@Suite struct MultistatusCrashRegressionTests {
    /// Found by `scripts/fuzz.sh` (FUZZ_TARGET=multistatus) within 20 s, minimised by hand.
    ///
    /// A processing instruction without data, `<?foo?>`, anywhere in a body, makes
    /// swift-corelibs-foundation's XMLParser (Swift 6.3.1) call `strlen(NULL)` in
    /// `_NSXMLParserProcessingInstruction`: SIGSEGV. A WebDAV server (or anything answering on
    /// its URL) can therefore crash ferryd with a 7-byte body. `<?foo ?>` and `<?foo bar?>` are fine.
    /// Now: a typed `MultistatusParser.Failure`, never a crash.
    @Test func processingInstructionWithoutData_doesNotCrash() async {
        await #expect(processExitsWith: .success) {
            let body = Data(#"<multistatus xmlns="DAV:"><?foo?></multistatus>"#.utf8)
            _ = try? MultistatusParser(maxDataBytes: 100).parse(body)
        }
    }

    /// The same, before the root element, as the fuzzer first produced it.
    @Test func dataLessXMLDeclaration_doesNotCrash() async {
        await #expect(processExitsWith: .success) {
            let body = Data(#"<?xml?><error xmlns="DAV:"><valid-sync-token/></error>"#.utf8)
            _ = try? MultistatusParser(maxDataBytes: 100).parse(body)
        }
    }

    /// Control: the same shapes with data parse (or fail) normally in-process.
    @Test func processingInstructionsWithData_parse() throws {
        let parser = MultistatusParser(maxDataBytes: 100)
        let status = try parser.parse(Data(#"<?xml version="1.0"?><multistatus xmlns="DAV:"><?foo bar?><?foo ?></multistatus>"#.utf8))
        #expect(status.root == "multistatus")
        #expect(status.responses.isEmpty)
    }
}

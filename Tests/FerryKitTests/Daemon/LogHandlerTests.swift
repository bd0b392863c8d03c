import FerryKit
import FerryTestSupport
import Foundation
import Logging
import Testing

/// journald field construction (pure) and the stderr fallback through a real pipe.
@Suite struct LogHandlerTests {
    @Test func journalFields_mapMetadataToFerryFieldsAndMessageID() {
        let fields = JournalFields.make(
            level: .error,
            message: "pass failed",
            metadata: [
                "store": "quotes", "pass": "42", "operation": "fetch", "records": "1000",
                "duration_ms": .stringConvertible(250), "message_id": .string(MessageID.passFailed.rawValue),
                "weird-key.x": "v",
            ],
            identifier: "ferryd", file: "FerryKit/Pass.swift", function: "run()", line: 17
        )
        #expect(fields == [
            "MESSAGE=pass failed",
            "PRIORITY=3",
            "SYSLOG_IDENTIFIER=ferryd",
            "CODE_FILE=FerryKit/Pass.swift",
            "CODE_LINE=17",
            "CODE_FUNC=run()",
            "FERRY_DURATION_MS=250",
            "FERRY_OPERATION=fetch",
            "FERRY_PASS=42",
            "FERRY_RECORDS=1000",
            "FERRY_STORE=quotes",
            "FERRY_WEIRD_KEY_X=v",
            "MESSAGE_ID=da149cc9f5674d80aa3d4421ce53d12e",
        ])
    }

    @Test func priorities_followSyslog() {
        #expect(Logger.Level.allCases.map(JournalFields.priority(of:)) == [7, 7, 6, 5, 4, 3, 2])
    }

    @Test func fieldNames_areValidJournalFields() {
        for key in ["store", "a-b", "ünï", String(repeating: "k", count: 100), "x y"] {
            let name = JournalFields.fieldName(forMetadataKey: key)
            #expect(name.count <= 64)
            #expect(name.hasPrefix("FERRY_"))
            #expect(name.allSatisfy { ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "_" })
        }
    }

    @Test func messageIDs_are128BitHexAndDistinct() {
        let ids = MessageID.allCases.map(\.rawValue)
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.count == 32)
            #expect(id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        }
    }

    @Test func stderrHandler_writesPrefixedLinesToAPipe() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let handler = StderrLogHandler(level: .debug, fileDescriptor: fds[1])
        var logger = Logger(label: "test") { _ in handler }
        logger[metadataKey: "store"] = "quotes"
        logger.info("pass finished", metadata: ["records": "1000", "note": "two words"])
        logger.warning("line one\nline two")
        logger.trace("below the level")
        close(fds[1])
        let output = String(decoding: FileHandle(fileDescriptor: fds[0]).readDataToEndOfFile(), as: UTF8.self)
        #expect(output == """
            <6>pass finished note="two words" records=1000 store=quotes
            <4>line one\\nline two store=quotes

            """)
    }

    @Test func stderrFormat_withoutPrefixForTerminals() {
        #expect(StderrLogHandler.format(level: .error, message: "x", metadata: ["k": "", "q": "say \"hi\""], priorityPrefix: false)
            == "x k=\"\" q=\"say \\\"hi\\\"\"\n")
    }

    @Test func journalStream_mustMatchStderrsDeviceAndInode() throws {
        var info = stat()
        try #require(fstat(STDERR_FILENO, &info) == 0)
        let value = "\(info.st_dev):\(info.st_ino)"
        #expect(FerryLogging.journalStream(value, matchesDevice: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
        #expect(!FerryLogging.journalStream(value, matchesDevice: UInt64(info.st_dev), inode: UInt64(info.st_ino) + 1))
        #expect(!FerryLogging.journalStream("garbage", matchesDevice: 0, inode: 0))
        #expect(FerryLogging.destination(environment: ["JOURNAL_STREAM": value]) == .journal)
        #expect(FerryLogging.destination(environment: ["JOURNAL_STREAM": "1:2"]) == .stderr)
        #expect(FerryLogging.destination(environment: [:]) == .stderr)
    }
}

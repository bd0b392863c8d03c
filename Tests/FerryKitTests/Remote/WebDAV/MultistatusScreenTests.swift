import Foundation
import Testing
@testable import FerryKit
import FerryTestSupport

/// The byte screen in front of XMLParser judges a body the same however it is split into
/// chunks, and the same as the plain whole-body checks it replaced.
@Suite struct MultistatusScreenTests {
    typealias Generator = WebDAVFuzzTests.Generator

    /// The whole-body check the screen replaced, kept as the reference: a "<?" whose target
    /// (the bytes up to white space or '?') is followed by "?>".
    static func hasInstructionWithoutData(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "<"), bytes[index + 1] == UInt8(ascii: "?") {
                var end = index + 2
                while end < bytes.count, ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "?")].contains(bytes[end]) { end += 1 }
                if end + 1 < bytes.count, bytes[end] == UInt8(ascii: "?"), bytes[end + 1] == UInt8(ascii: ">") { return true }
            }
            index += 1
        }
        return false
    }

    /// Screens `bytes` cut at `cuts` (sorted offsets), with `finish()` at the end.
    static func screen(_ bytes: [UInt8], cuts: [Int] = []) -> MultistatusParser.Failure? {
        var screen = MultistatusScreen()
        var start = 0
        do {
            for end in cuts + [bytes.count] where end >= start {
                try screen.screen(Data(bytes[start..<end]))
                start = end
            }
            try screen.finish()
            return nil
        } catch {
            return error
        }
    }

    static func randomInput(_ random: inout Generator) -> [UInt8] {
        if Bool.random(using: &random) {
            let seed = Array(WebDAVFuzzTests.multistatusCorpus.randomElement(using: &random)!.utf8)
            return WebDAVFuzzTests.mutate(seed, &random)
        }
        // Short bodies dense in the bytes both checks care about; half of them valid UTF-8, so
        // that instructions are judged on their own.
        let valid: [[UInt8]] = ["<", "?", ">", " ", "\n", "x", "é", "€", "😀", "<?", "?>", "<?x"].map { Array($0.utf8) }
        let invalid: [[UInt8]] = [[0xFF], [0xC3], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90]]
        let alphabet = Bool.random(using: &random) ? valid : valid + invalid
        return (0..<Int.random(in: 0...24, using: &random)).flatMap { _ in alphabet.randomElement(using: &random)! }
    }

    @Test func randomSplitsGiveTheWholeBodysVerdictAndPosition() {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0x5C4EE)
        for _ in 0..<4_000 {
            let input = Self.randomInput(&random)
            let whole = Self.screen(input)
            let cuts = (0..<Int.random(in: 1...6, using: &random)).map { _ in Int.random(in: 0...input.count, using: &random) }.sorted()
            let split = Self.screen(input, cuts: cuts)
            #expect(split == whole, "\(input) cut at \(cuts)")
            // Byte by byte, the hardest split.
            #expect(Self.screen(input, cuts: Array(0..<input.count)) == whole, "\(input) byte by byte")
        }
    }

    @Test func verdictMatchesThePlainChecks() {
        var random = Generator(state: WebDAVFuzzTests.seed ^ 0xC4EC)
        var refused = (utf8: 0, instruction: 0)
        for _ in 0..<4_000 {
            let input = Self.randomInput(&random)
            let failure = Self.screen(input)
            let validUTF8 = String(validating: input, as: UTF8.self) != nil
            let instruction = Self.hasInstructionWithoutData(input)
            #expect((failure == nil) == (validUTF8 && !instruction), "\(input): \(String(describing: failure))")
            if !validUTF8 { refused.utf8 += 1 } else if instruction { refused.instruction += 1 }
            if validUTF8, instruction {
                #expect(failure?.message.hasPrefix("processing instruction without data") == true)
            }
        }
        // The inputs reach both refusals often enough for the comparison to mean something.
        #expect(refused.utf8 > 200 && refused.instruction > 200, "\(refused)")
    }

    @Test func positionsPointAtTheOffendingSequence() {
        // A four-byte sequence cut short by a chunk boundary and then by an ASCII byte.
        let cut = Array("<a>\nxy".utf8) + [0xF0, 0x9F] + Array("z".utf8)
        #expect(Self.screen(cut, cuts: [7]) == MultistatusParser.Failure(line: 2, column: 3, message: "body is not valid UTF-8"))
        // A sequence the body ends inside.
        #expect(Self.screen(Array("ab".utf8) + [0xE2, 0x82], cuts: [3]) == MultistatusParser.Failure(line: 1, column: 3, message: "body is not valid UTF-8"))
        // An instruction split across three chunks points at its '<'.
        let instruction = Array("<multistatus>\n  <?x?>".utf8)
        #expect(Self.screen(instruction, cuts: [17, 19, 20]) == MultistatusParser.Failure(line: 2, column: 3, message: "processing instruction without data (<?name?>): refused, the XML parser cannot take it"))
        // Non-ASCII characters before it count one column each.
        #expect(Self.screen(Array("é€😀<?a?>".utf8))?.column == 4)
    }
}

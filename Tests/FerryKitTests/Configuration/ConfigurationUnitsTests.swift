import FerryKit
import FerryTestSupport
import Testing

@Suite struct ConfigurationUnitsTests {
    @Test func durations_acceptEveryUnitAndCombinations() {
        #expect(ConfigurationUnits.duration("250ms") == .milliseconds(250))
        #expect(ConfigurationUnits.duration("30s") == .seconds(30))
        #expect(ConfigurationUnits.duration("5m") == .seconds(300))
        #expect(ConfigurationUnits.duration("2h") == .seconds(7_200))
        #expect(ConfigurationUnits.duration("1d") == .seconds(86_400))
        #expect(ConfigurationUnits.duration("1h30m") == .seconds(5_400))
        #expect(ConfigurationUnits.duration(" 0 ") == .zero)
    }

    @Test func durations_refuseBareNumbersUnknownUnitsAndOverflow() {
        for text in ["30", "", "s", "5 m", "3w", "-1s", "1.5h", "99999999999999999999s", "200000000d"] {
            #expect(ConfigurationUnits.duration(text) == nil, "\(text)")
        }
    }

    @Test func sizes_binaryAndDecimalUnits() {
        #expect(ConfigurationUnits.size("1048576") == 1_048_576)
        #expect(ConfigurationUnits.size("256MiB") == 256 << 20)
        #expect(ConfigurationUnits.size("256M") == 256 << 20)
        #expect(ConfigurationUnits.size("1MB") == 1_000_000)
        #expect(ConfigurationUnits.size("512KiB") == 512 << 10)
        #expect(ConfigurationUnits.size("2kB") == 2_000)
        #expect(ConfigurationUnits.size("1GiB") == 1 << 30)
        #expect(ConfigurationUnits.size("7B") == 7)
        for text in ["", "MiB", "1TB", "1.5MiB", "-3", "99999999999GiB"] {
            #expect(ConfigurationUnits.size(text) == nil, "\(text)")
        }
    }

    @Test func shares_percentOrFractionWithinZeroToOne() {
        #expect(ConfigurationUnits.share("50%") == 0.5)
        #expect(ConfigurationUnits.share("0.25") == 0.25)
        #expect(ConfigurationUnits.share("100%") == 1)
        #expect(ConfigurationUnits.share("150%") == nil)
        #expect(ConfigurationUnits.share("half") == nil)
    }

    @Test func format_writesTheLargestExactUnit() {
        #expect(ConfigurationUnits.format(.seconds(86_400 * 30)) == "30d")
        #expect(ConfigurationUnits.format(.seconds(600)) == "10m")
        #expect(ConfigurationUnits.format(.milliseconds(1_500)) == "1500ms")
        #expect(ConfigurationUnits.format(.zero) == "0")
    }
}

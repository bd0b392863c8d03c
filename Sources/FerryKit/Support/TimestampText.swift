/// An ISO 8601 time as APIs write it in records, read without Foundation's formatters: the
/// merge compares versions with it for every record it meets, and a `DateFormatter` costs
/// microseconds where this costs nanoseconds.
///
/// Every form the APIs Ferry meets document: a date alone (`2024-01-15`), a time to the minute,
/// second or any fraction (`.237`, `.1234567`, `,5`), `T`, `t` or a space between them, and a
/// zone of `Z`, `±HH:MM`, `±HHMM` (Jira's `+0000`), `±HH`, or none (WordPress's `modified_gmt`,
/// a time in UTC that does not say so), optionally after a space, or ` UTC`.
struct TimestampText: Sendable, Equatable {
    /// Seconds since 1970-01-01T00:00:00 in UTC; for a time written without a zone, as if it
    /// were UTC.
    var seconds: Int64
    /// The fraction, in nanoseconds (digits past the ninth are dropped).
    var nanoseconds: Int32
    /// The zone's offset east of UTC in seconds, as the text named it (`Z`: 0); nil: the text
    /// named no zone. A zoned and an unzoned time name no common instant: ``VersionOrder``
    /// compares them as text.
    var offset: Int32?

    var zoned: Bool { offset != nil }

    init(seconds: Int64, nanoseconds: Int32, offset: Int32?) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
        self.offset = offset
    }

    /// The instant, for ordering: two zoned times (or two unzoned ones) compare as instants.
    var instant: (Int64, Int32) { (seconds, nanoseconds) }

    static func parse(_ text: String) -> TimestampText? {
        var text = text
        return text.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    // One pass over the bytes with a cursor: each part reads its digits and separators or
    // fails, so nothing but the forms above parses.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> TimestampText? {
        var index = 0
        let count = bytes.count
        func digits(_ width: Int) -> Int? {
            guard index + width <= count else { return nil }
            var value = 0
            for offset in 0..<width {
                let digit = bytes[index + offset] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            index += width
            return value
        }
        func take(_ byte: UInt8) -> Bool {
            guard index < count, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), take(UInt8(ascii: "-")), let month = digits(2), take(UInt8(ascii: "-")), let day = digits(2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day) else { return nil }
        var seconds = Int64(daysSinceEpoch(year: year, month: month, day: day)) * 86_400
        var nanoseconds: Int32 = 0
        var offset: Int32?
        if index < count, bytes[index] == UInt8(ascii: "T") || bytes[index] == UInt8(ascii: "t") || bytes[index] == UInt8(ascii: " "),
           index + 1 < count, bytes[index + 1] &- UInt8(ascii: "0") < 10 {
            index += 1
            guard let hour = digits(2), take(UInt8(ascii: ":")), let minute = digits(2), hour < 24, minute < 60 else { return nil }
            var second = 0
            if take(UInt8(ascii: ":")) {
                guard let value = digits(2), value < 61 else { return nil }
                second = value
                if take(UInt8(ascii: ".")) || take(UInt8(ascii: ",")) {
                    var scale: Int32 = 100_000_000
                    var read = 0
                    while index < count, bytes[index] &- UInt8(ascii: "0") < 10 {
                        nanoseconds += Int32(bytes[index] &- UInt8(ascii: "0")) * scale
                        scale /= 10
                        index += 1
                        read += 1
                    }
                    guard read > 0 else { return nil }
                }
            }
            seconds += Int64(hour * 3600 + minute * 60 + second)
            // A zone may follow a space ("2024-01-15 15:08:24 +0000", "... UTC").
            let beforeSpace = index
            _ = take(UInt8(ascii: " "))
            if take(UInt8(ascii: "Z")) || take(UInt8(ascii: "z")) {
                offset = 0
            } else if index + 3 <= count, bytes[index] == UInt8(ascii: "U"), bytes[index + 1] == UInt8(ascii: "T"), bytes[index + 2] == UInt8(ascii: "C") {
                index += 3
                offset = 0
            } else if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
                index += 1
                guard let hours = digits(2), hours < 24 else { return nil }
                var minutes = 0
                if take(UInt8(ascii: ":")) {
                    guard let value = digits(2) else { return nil }
                    minutes = value
                } else if index < count {
                    guard let value = digits(2) else { return nil }
                    minutes = value
                }
                guard minutes < 60 else { return nil }
                let east = sign * Int64(hours * 3600 + minutes * 60)
                seconds -= east
                offset = Int32(east)
            } else {
                index = beforeSpace
            }
        }
        guard index == count else { return nil }
        return TimestampText(seconds: seconds, nanoseconds: nanoseconds, offset: offset)
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
    /// `days_from_civil`).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

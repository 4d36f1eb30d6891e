/// RFC 4180 records from bytes fed in pieces (quoted fields may hold commas, quotes and line breaks). Bounded: a
/// record of more than `maxRecordBytes` or `maxFields` fields is an error, so a hostile file cannot grow memory.
struct CSVRecordReader {
    struct Failure: Error { var message: String }

    static let maxRecordBytes = 1 << 20
    static let maxFields = 64

    private var field: [UInt8] = []
    private var fields: [String] = []
    private var recordBytes = 0
    private var quoted = false
    /// After a closing quote inside a quoted field (a second quote makes an escaped one).
    private var quoteSeen = false
    private var atFieldStart = true
    private(set) var line = 1

    mutating func feed(_ bytes: [UInt8]) throws(Failure) -> [[String]] {
        var records: [[String]] = []
        for byte in bytes {
            recordBytes += 1
            guard recordBytes <= Self.maxRecordBytes else { throw Failure(message: "a record longer than 1 MiB") }
            if quoted {
                if quoteSeen {
                    quoteSeen = false
                    if byte == 0x22 { field.append(0x22); continue }
                    quoted = false  // the quote closed the field; this byte follows it
                } else if byte == 0x22 {
                    quoteSeen = true
                    continue
                } else {
                    if byte == 0x0A { line += 1 }
                    field.append(byte)
                    continue
                }
            }
            switch byte {
            case 0x22 where atFieldStart:
                quoted = true
                atFieldStart = false
            case 0x2C:
                try endField()
            case 0x0D:
                continue  // CRLF: the LF ends the record
            case 0x0A:
                try endField()
                records.append(fields)
                fields = []
                recordBytes = 0
                line += 1
            default:
                field.append(byte)
                atFieldStart = false
            }
        }
        return records
    }

    /// The last record when the input does not end with a line break.
    mutating func finish() throws(Failure) -> [[String]] {
        if quoted && !quoteSeen { throw Failure(message: "a quoted field is not closed") }
        quoted = false
        quoteSeen = false
        guard !field.isEmpty || !fields.isEmpty else { return [] }
        try endField()
        defer { fields = [] }
        return [fields]
    }

    private mutating func endField() throws(Failure) {
        guard fields.count < Self.maxFields else { throw Failure(message: "more than \(Self.maxFields) fields") }
        fields.append(String(decoding: field, as: UTF8.self))
        field.removeAll(keepingCapacity: true)
        atFieldStart = true
    }
}

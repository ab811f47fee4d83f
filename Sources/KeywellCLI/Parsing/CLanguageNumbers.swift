/// `atoi(3)`: leading spaces, an optional sign, then digits; anything else ends the number and
/// no digits at all is 0. `security` reads ports and timeouts this way, so `-P abc` is port 0.
func atoi(_ text: String) -> Int32 {
    var bytes = text.utf8.drop { $0 == 0x20 || (0x09...0x0D).contains($0) }[...]
    var negative = false
    if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
        negative = sign == UInt8(ascii: "-")
        bytes = bytes.dropFirst()
    }
    // glibc's atoi is (int)strtol: saturate at the long range, then keep the low 32 bits.
    var value: Int64 = 0
    for byte in bytes {
        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { break }
        let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
        if overflow1 || overflow2 { value = negative ? Int64.min : Int64.max; negative = false; break }
        value = sum
    }
    return Int32(truncatingIfNeeded: negative ? -value : value)
}

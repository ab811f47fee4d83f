import Testing

@testable import KeywellCore

@Suite struct CommonPairsTests {
    @Test func remembersPairsExactly() {
        let pairs = CommonPairs(capacity: 4)
        pairs.insert(name: "xdg:schema", value: "org.example.Mail")
        #expect(pairs.contains([("xdg:schema", "org.example.Mail"), ("xdg:schema", "org.example.mail"),
                                ("service", "org.example.Mail")]) == [true, false, false])
        #expect(pairs.contains([]) == [])
    }

    @Test func staysWithinItsCapacity() {
        let pairs = CommonPairs(capacity: 2)
        for index in 0..<5 { pairs.insert(name: "n", value: "\(index)") }
        let known = pairs.contains((0..<5).map { ("n", "\($0)") })
        #expect(known.filter { $0 }.count == 2)
        #expect(known[4])  // the newest is always kept
    }
}

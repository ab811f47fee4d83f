import Testing
@testable import KeywellDBus

/// The decoder counts every value it makes (a byte array as one) and refuses a message past its
/// budget with the same error wherever the value lies: at the top, in a struct, a variant, a
/// dictionary entry or an array of secret structs.
@Suite("The decoder's budget of values")
struct DecoderBudgetTests {
    private func message(_ arguments: [DBusValue]) throws -> MessageRef {
        try MessageRef.methodCall(destination: nil, path: "/t", interface: "org.example.T", member: "M", arguments: arguments)
    }

    private static let secret = DBusValue.structure([.objectPath("/s"), .bytes([1, 2]), .bytes([]), .string("text/plain")])

    /// Each message and the values it holds: the decoder takes exactly that many, not one fewer.
    private static let cases: [([DBusValue], Int)] = [
        ([.string("a"), .uint32(1)], 2),
        ([secret], 5),
        ([.variant(.variant(.int16(-1)))], 3),
        ([.stringVariantDict(["k": .bytes([9]), "l": .string("x")])], 7),
        ([.dictionary(keySignature: .objectPath, valueSignature: "(oayays)",
                      (0..<3).map { DBusDictEntry(key: .objectPath("/i/\($0)"), value: secret) })], 1 + 3 * 6),
        ([.array(elementSignature: .int32, [1, 2, 3].map(DBusValue.int32))], 4),
        ([.structure([.structure([.bool(true)]), .array(elementSignature: .string, [])])], 4),
    ]

    @Test(arguments: cases.indices) func exactlyTheBudgetDecodesAndOneLessIsRefused(index: Int) throws {
        let (arguments, count) = Self.cases[index]
        let call = try message(arguments)
        #expect(try call.arguments(maximumValues: count) == arguments)
        do {
            _ = try call.arguments(maximumValues: count - 1)
            Issue.record("\(arguments) decoded within \(count - 1) values")
        } catch {
            #expect(error.name == DBusError.Name.limitsExceeded)
            #expect(error.message == "The arguments hold more than \(count - 1) values, the most one call may have")
        }
    }

    @Test func aMessageWithoutArgumentsIsEmpty() throws {
        #expect(try message([]).arguments(maximumValues: 0).isEmpty)
    }
}

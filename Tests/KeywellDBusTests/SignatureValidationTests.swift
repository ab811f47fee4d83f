import CDBus
import Testing
@testable import KeywellDBus

/// Flat signatures (basic types, variants, arrays of them, dictionaries of a basic key) are
/// judged without libdbus's validator; every answer must be libdbus's own.
@Suite("Signatures are judged as libdbus judges them")
struct SignatureValidationTests {
    private func libdbusValid(_ signature: String) -> Bool {
        signature.withCString { dbus_signature_validate($0, nil) } != 0
    }

    private func libdbusSingle(_ signature: String) -> Bool {
        signature.withCString { dbus_signature_validate_single($0, nil) } != 0
    }

    /// Every string of up to five codes over the flat shapes' letters, a container's and one
    /// that is no type code at all.
    @Test func everyShortSignatureGetsLibdbusAnswer() {
        let codes = Array("yhvoa{}()z")
        var checked = 0
        var flat = 0
        var strings: [String] = [""]
        for _ in 1...5 {
            strings = strings.flatMap { prefix in codes.map { prefix + String($0) } }
            for signature in strings {
                if DBusSignature.flatCompleteTypes(signature) != nil { flat += 1 }
                #expect(DBusSignature.isValid(signature) == libdbusValid(signature), "\(signature)")
                #expect(DBusSignature(unchecked: signature).isSingleCompleteType == libdbusSingle(signature), "\(signature)")
                checked += 1
            }
        }
        #expect(checked == 10 + 100 + 1000 + 10000 + 100000)
        #expect(flat > 1000)  // the fast path was taken, not only libdbus asked
    }

    @Test(arguments: ["s", "o", "ao", "aoao", "a{ss}", "a{sv}", "as", "ay", "sa{sv}as", "ybnqiuxtdsogh", "v", "av", "a{oh}",
                      "(oayays)", "(s)", "(a{sv}as)o", "(v)(y)"])
    func commonFlatSignatures(signature: String) {
        #expect(DBusSignature.flatCompleteTypes(signature) != nil)
        #expect(DBusSignature.isValid(signature) == libdbusValid(signature))
        #expect(DBusSignature(unchecked: signature).isSingleCompleteType == libdbusSingle(signature))
    }

    @Test func theLengthLimitHoldsOnTheFastPath() {
        for signature in [String(repeating: "y", count: 255), String(repeating: "y", count: 256),
                          String(repeating: "ao", count: 127) + "y", String(repeating: "ao", count: 128)] {
            #expect(DBusSignature.flatCompleteTypes(signature) != nil)
            #expect(DBusSignature.isValid(signature) == libdbusValid(signature), "\(signature.utf8.count) bytes")
        }
        #expect(!DBusSignature.isValid(String(repeating: "y", count: 256)))
    }

    @Test(arguments: ["a{vs}", "a{sa}", "a{s}", "{ss}", "a{ss", "aa", "a", "a(", "()", "(s", "((s))", "a(s)", "a{s(s)}",
                      "(aas)", "s)", "s\u{0}s", "é"])
    func otherShapesGoToLibdbus(signature: String) {
        #expect(DBusSignature.isValid(signature) == (!signature.contains("\u{0}") && libdbusValid(signature)))
    }
}

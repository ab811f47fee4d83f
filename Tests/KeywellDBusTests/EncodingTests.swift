import KeywellDBus
import Testing

@Suite("Values that cannot be sent fail with typed errors, never a crash")
struct EncodingTests {
    let fixture: ServiceFixture
    init() throws { fixture = try ServiceFixture() }

    func expectRejected(_ values: [DBusValue], _ errorName: String? = nil) {
        do {
            _ = try fixture.call("Echo", values)
            Issue.record("\(values) should have been rejected")
        } catch {
            if let errorName { #expect(error.name == errorName) }
        }
    }

    @Test func invalidValuesAreRefusedBeforeReachingLibdbus() throws {
        expectRejected([.string("nul\0inside")], DBusError.Name.invalidArgs)
        expectRejected([.objectPath("not/a/path")], DBusError.Name.invalidArgs)
        expectRejected([.objectPath("/trailing/")], DBusError.Name.invalidArgs)
        expectRejected([.signature("a{vs}")])
        expectRejected([.array(elementSignature: .string, [.int32(1)])], DBusError.Name.invalidArgs)
        expectRejected([.array(elementSignature: "{sv}", [])])
        // "ass" is a valid signature (two types), but "ss" is not one element type.
        expectRejected([.array(elementSignature: "ss", [])])
        expectRejected([.dictionary(keySignature: .variant, valueSignature: .string, [])])
        expectRejected([.stringVariantDict(["k": .string("x")]).replacingFirstValue(with: .string("not a variant"))])
        expectRejected([.structure([])])
        expectRejected([.unixFD(-1)], DBusError.Name.invalidArgs)
        // Still serving after all of that.
        #expect(try fixture.call("Echo", [.string("ok")]) == [.string("ok")])
    }

    /// Elements are checked against their container's declared type at every depth (without
    /// building each element's signature): a mismatch anywhere is refused, a match is sent.
    @Test func elementsMustHaveTheirContainersTypeAtEveryDepth() throws {
        let secret = DBusValue.structure([.objectPath("/s"), .bytes([]), .bytes([1]), .string("text/plain")])
        func secrets(_ value: DBusValue) -> DBusValue {
            .dictionary(keySignature: .objectPath, valueSignature: "(oayays)", [
                DBusDictEntry(key: .objectPath("/i/1"), value: secret),
                DBusDictEntry(key: .objectPath("/i/2"), value: value),
            ])
        }
        // A field of the wrong type, one field too many or too few, a wrong key type.
        expectRejected([secrets(.structure([.string("/s"), .bytes([]), .bytes([1]), .string("t")]))], DBusError.Name.invalidArgs)
        expectRejected([secrets(.structure([.objectPath("/s"), .bytes([]), .bytes([1]), .string("t"), .string("more")]))], DBusError.Name.invalidArgs)
        expectRejected([secrets(.structure([.objectPath("/s"), .bytes([]), .bytes([1])]))], DBusError.Name.invalidArgs)
        expectRejected([secrets(.string("not a struct"))], DBusError.Name.invalidArgs)
        expectRejected([.dictionary(keySignature: .objectPath, valueSignature: "(oayays)", [DBusDictEntry(key: .string("/i"), value: secret)])],
                       DBusError.Name.invalidArgs)
        // Nested arrays: the inner array's declared type must be the outer element type.
        expectRejected([.array(elementSignature: "ai", [.array(elementSignature: .uint32, [])])], DBusError.Name.invalidArgs)
        expectRejected([.array(elementSignature: "a{ss}", [.stringVariantDict([:])])], DBusError.Name.invalidArgs)
        expectRejected([.array(elementSignature: "(is)", [.structure([.int32(1), .string("a")]), .structure([.string("a"), .int32(1)])])],
                       DBusError.Name.invalidArgs)
        // Both forms of `ay` are `ay`; a variant element is any variant.
        let accepted: [DBusValue] = [
            secrets(.structure([.objectPath("/s"), .array(elementSignature: .byte, [.byte(2)]), .bytes([]), .string("")])),
            .array(elementSignature: .bytes, [.bytes([1]), .array(elementSignature: .byte, [])]),
            .array(elementSignature: .variant, [.variant(.int32(1)), .variant(.structure([.string("x")]))]),
            .array(elementSignature: "a{sv}", [.stringVariantDict(["k": .variant(.bool(true))])]),
        ]
        #expect(try fixture.call("Echo", accepted).count == accepted.count)
    }

    @Test func tooDeepNestingIsRefused() throws {
        var value = DBusValue.string("core")
        for _ in 0..<100 { value = .variant(value) }
        expectRejected([value], DBusError.Name.limitsExceeded)
        var structs = DBusValue.int32(1)
        for _ in 0..<1000 { structs = .structure([structs]) }
        expectRejected([structs], DBusError.Name.limitsExceeded)
    }

    /// Arrays whose element type has no variant skip the depth walk; a variant still gets it,
    /// however deep inside an array or a dictionary it sits.
    @Test func deepVariantsInsideArraysAreStillRefused() throws {
        var value = DBusValue.string("core")
        for _ in 0..<100 { value = .variant(value) }
        expectRejected([.array(elementSignature: .variant, [value])], DBusError.Name.limitsExceeded)
        expectRejected([.stringVariantDict(["k": value])], DBusError.Name.limitsExceeded)
        // An element that is not of the declared type is refused before anything descends into it.
        var structs = DBusValue.int32(1)
        for _ in 0..<1000 { structs = .structure([structs]) }
        expectRejected([.array(elementSignature: "(i)", [structs])], DBusError.Name.invalidArgs)
    }

    @Test func invalidNamesAreRefused() throws {
        #expect(throws: DBusError.self) {
            try fixture.client.call(destination: "not a name", path: "/", interface: nil, member: "X")
        }
        #expect(throws: DBusError.self) {
            try fixture.client.call(destination: ServiceFixture.name, path: "bad", interface: nil, member: "X")
        }
        #expect(throws: DBusError.self) {
            try fixture.client.call(destination: ServiceFixture.name, path: "/", interface: "no-dots", member: "X")
        }
        #expect(throws: DBusError.self) {
            try fixture.client.emitSignal(path: "/", interface: "a.b", member: "has.dot")
        }
    }

    @Test func errorNamesThatAreInvalidBecomeFailed() throws {
        do {
            _ = try fixture.call("Fail", [.string("not valid"), .string("text kept")])
            Issue.record("expected an error")
        } catch {
            #expect(error.name == DBusError.Name.failed)
            #expect(error.message == "text kept")
        }
    }

    @Test func signatures() throws {
        #expect(throws: DBusError.self) { try DBusSignature(validating: "a{vs}") }
        #expect(throws: DBusError.self) { try DBusSignature(validating: "(") }
        #expect(throws: DBusError.self) { try DBusSignature(validating: String(repeating: "a", count: 40) + "s") }
        let signature = try DBusSignature(validating: "sa{sv}(oayays)aai")
        #expect(signature.completeTypes == ["s", "a{sv}", "(oayays)", "aai"])
        #expect(DBusSignature("a{sv}").isSingleCompleteType)
        #expect(!DBusSignature("ss").isSingleCompleteType)
        #expect(DBusValue.stringVariantDict([:]).signature == "a{sv}")
        #expect([DBusValue.string("a"), .structure([.int32(1), .bytes([])])].signature == "s(iay)")
    }
}

extension DBusValue {
    /// For tests: the same dictionary with its first entry's value swapped (to forge bad input).
    func replacingFirstValue(with value: DBusValue) -> DBusValue {
        guard case .dictionary(let key, let valueSignature, var entries) = self, !entries.isEmpty else { return self }
        entries[0].value = value
        return .dictionary(keySignature: key, valueSignature: valueSignature, entries)
    }
}

import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite struct TamperAndSecrecyTests {
    @Test func aFlippedByteInASealedSecretIsDecodeNotWrongData() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("a", "s", [WireKey.valueData: data("original secret")]))
        let path = environment.path(of: "login")
        let sealed = try sqlite(path, "SELECT hex(secret) FROM item WHERE acct = 'a'")
        for position in [0, 30, sealed.count - 2] {  // nonce, ciphertext, tag
            var flipped = Array(sealed)
            flipped[position] = flipped[position] == "0" ? "1" : "0"
            try sqlite(path, "UPDATE item SET secret = X'\(String(flipped))' WHERE acct = 'a'")
            expectStatus(SecStatus.decode) { _ = try store.copyMatching(genp("a", "s") + returnData) }
            // Attributes stay readable.
            #expect(try store.copyMatching(genp("a", "s") + returnAttributes)[0]["acct"] == .string("a"))
        }
        try sqlite(path, "UPDATE item SET secret = X'00' WHERE acct = 'a'")
        expectStatus(SecStatus.decode) { _ = try store.copyMatching(genp("a", "s") + returnData) }
    }

    @Test func aSecretMovedToAnotherRowOrIdentityIsDecode() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "other"])
        _ = try store.add(genp("a", "s", [WireKey.valueData: data("secret of a")]))
        _ = try store.add(genp("b", "s", [WireKey.valueData: data("secret of b")]))
        _ = try store.add(genp("c", "s", [WireKey.valueData: data("secret of c")]))
        let path = environment.path(of: "login")
        try sqlite(path, "UPDATE item SET secret = (SELECT secret FROM item WHERE acct = 'a') WHERE acct = 'b'")
        expectStatus(SecStatus.decode) { _ = try store.copyMatching(genp("b", "s") + returnData) }
        #expect(try store.copyMatching(genp("a", "s") + returnData) == [[WireKey.valueData: data("secret of a")]])

        // Renaming an item on disk (its identity) breaks its seal too.
        try sqlite(path, "UPDATE item SET acct = 'evil', acct_n = 'evil', acct_f = 'evil' WHERE acct = 'c'")
        expectStatus(SecStatus.decode) { _ = try store.copyMatching(genp("evil", "s") + returnData) }

        // A row copied into another keychain file does not open there either.
        _ = try store.add(genp("a", "s", [WireKey.useKeychain: .string("other")]))
        let sealed = try sqlite(path, "SELECT hex(secret) FROM item WHERE acct = 'a'")
        try sqlite(environment.path(of: "other"), "UPDATE item SET secret = X'\(sealed)' WHERE acct = 'a'")
        expectStatus(SecStatus.decode) {
            _ = try store.copyMatching(genp("a", "s") + returnData + [WireKey.useKeychain: .string("other")])
        }
    }

    @Test func secretsAndPasswordsNeverReachTheDisk() throws {
        let environment = try TestEnvironment()
        let marker = "KEYWELL-MARKER-\(UUID().uuidString)"
        let password = "PASSWORD-MARKER-\(UUID().uuidString)"
        var store: KeychainStore? = try environment.makeStore()
        _ = try store!.createKeychain("login", password: secret(password))
        _ = try store!.add(genp("a", "s", [WireKey.valueData: data(marker + "-added")]))
        try store!.addBatch((0..<20).map { genp("batch\($0)", "s", [WireKey.valueData: data(marker + "-batch\($0)")]) })
        try store!.update(genp("a", "s"), [WireKey.valueData: data(marker + "-updated"), "acct": .string("b")])
        try store!.changePassword("login", old: secret(password), new: secret(password + "-new"))
        try store!.delete(genp("batch3", "s"))

        func expectNoMarkers(_ moment: String) throws {
            let files = environment.allFiles()
            #expect(files.contains { $0.hasSuffix("-wal") } || moment == "closed")
            for file in files {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
                for needle in [marker, password] {
                    #expect(bytes.range(of: Data(needle.utf8)) == nil, "\(needle.prefix(8)) found in \(file) (\(moment))")
                }
            }
        }
        try expectNoMarkers("open")
        store = nil
        try expectNoMarkers("closed")
        store = try environment.makeStore()
        try store!.unlock("login", password: secret(password + "-new"))
        #expect(try store!.copyMatching(genp("b", "s") + returnData) == [[WireKey.valueData: data(marker + "-updated")]])
    }

    @Test func theDefaultParametersAreSlowOnPurpose() throws {
        #expect(KDFParameters.default.opsLimit >= 2)
        #expect(KDFParameters.default.memLimit >= 64 << 20)
        let environment = try TestEnvironment()
        let store = try environment.makeStore(kdf: .default)
        _ = try store.createKeychain("real", password: secret("pw"))
        try store.lock("real")
        let clock = ContinuousClock()
        let start = clock.now
        try store.unlock("real", password: secret("pw"))
        let elapsed = clock.now - start
        // Not trivially fast: guessing must cost. How fast it is stays in `keywell-bench core`
        // (a timed upper bound here would only measure how busy the machine is).
        #expect(elapsed > .milliseconds(20))
        let limits = try sqlite(environment.path(of: "real"), "SELECT kdf_ops_limit || ',' || kdf_mem_limit FROM keychain")
        #expect(limits == "\(KDFParameters.default.opsLimit),\(KDFParameters.default.memLimit)")
    }
}

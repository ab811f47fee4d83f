import Foundation
import Testing

/// add/find/delete-generic-password: item blocks, -g/-w, -U, -X, prompts (docs/cli.md "Item blocks", "Password commands").
@Suite struct GenericPasswordTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }
    var login: String { session.path(of: "login") }

    @Test func findPrintsTheItemBlock() throws {
        let service = SharedSessions.unique("block")
        let added = try session.run(["add-generic-password", "-a", "alice", "-s", service, "-w", "s3cret"])
        #expect(added.exit == 0 && added.stdout.isEmpty && added.stderr.isEmpty)
        let found = try session.run(["find-generic-password", "-s", service])
        #expect(found.exit == 0)
        #expect(found.stderr.isEmpty)
        #expect(found.maskedStdout == ExpectedBlock.generic(keychain: login, label: "\"\(service)\"",
                                                            account: "\"alice\"", service: "\"\(service)\""))
        let dates = found.stdout.matches(of: try Regex(#""(cdat|mdat)"<timedate>=0x[0-9A-F]{32}  "\d{14}Z\\000""#))
        #expect(dates.count == 2)
    }

    @Test func everyAttributeOptionIsStoredAndPrinted() throws {
        let service = SharedSessions.unique("attrs")
        try session.ok(["add-generic-password", "-a", "bob", "-s", service, "-w", "pw", "-l", "My Label",
                        "-D", "app password", "-j", "a comment", "-G", "gen", "-c", "abcd", "-C", "efgh"])
        let found = try session.run(["find-generic-password", "-s", service])
        #expect(found.maskedStdout == ExpectedBlock.generic(
            keychain: login, label: "\"My Label\"", account: "\"bob\"", service: "\"\(service)\"",
            kind: "\"app password\"", generic: "\"gen\"", comment: "\"a comment\"", creator: "\"abcd\"", type: "\"efgh\""))
        // Each of them is a filter too.
        for filter in [["-l", "My Label"], ["-D", "app password"], ["-j", "a comment"], ["-G", "gen"], ["-c", "abcd"], ["-C", "efgh"]] {
            #expect(try session.run(["find-generic-password", "-s", service] + filter + ["-w"]).stdout == "pw\n", "\(filter)")
        }
        #expect(try session.run(["find-generic-password", "-s", service, "-j", "other"]).exit == 44)
    }

    @Test func bothAccountAndServiceIgnoreOtherFilters() throws {
        let service = SharedSessions.unique("shortcut")
        try session.ok(["add-generic-password", "-a", "carol", "-s", service, "-w", "pw", "-j", "real"])
        // With -a and -s the wrong comment does not matter [Q]; with -s alone it does.
        #expect(try session.run(["find-generic-password", "-a", "carol", "-s", service, "-j", "wrong", "-w"]).stdout == "pw\n")
        #expect(try session.run(["find-generic-password", "-s", service, "-j", "wrong"]).exit == 44)
        // Matching is exact and case-sensitive.
        #expect(try session.run(["find-generic-password", "-a", "Carol", "-s", service]).exit == 44)
    }

    @Test func passwordOutputWithDashGAndDashW() throws {
        let service = SharedSessions.unique("pw")
        try session.ok(["add-generic-password", "-a", "a", "-s", service, "-w", "plain text"])
        let g = try session.run(["find-generic-password", "-s", service, "-g"])
        #expect(g.stderr == "password: \"plain text\"\n")
        #expect(g.stdout.hasPrefix("keychain: "))
        let w = try session.run(["find-generic-password", "-s", service, "-w"])
        #expect(w.stdout == "plain text\n")
        #expect(w.stderr.isEmpty)

        // Non-printable bytes: -g uses print_buffer, -w lowercase hex of the whole password.
        let utf8 = SharedSessions.unique("utf8")
        try session.ok(["add-generic-password", "-a", "a", "-s", utf8, "-w", "jö"])
        #expect(try session.run(["find-generic-password", "-s", utf8, "-w"]).stdout == "6ac3b6\n")
        #expect(try session.run(["find-generic-password", "-s", utf8, "-g"]).stderr == "password: 0x6AC3B6  \"j\\303\\266\"\n")
        // A backslash is printable for -w but escaped by print_buffer.
        let slash = SharedSessions.unique("slash")
        try session.ok(["add-generic-password", "-a", "a", "-s", slash, "-w", "a\\b"])
        #expect(try session.run(["find-generic-password", "-s", slash, "-w"]).stdout == "a\\b\n")
        #expect(try session.run(["find-generic-password", "-s", slash, "-g"]).stderr == "password: 0x615C62  \"a\\134b\"\n")
        // No password at all: empty.
        let empty = SharedSessions.unique("empty")
        try session.ok(["add-generic-password", "-a", "a", "-s", empty])
        #expect(try session.run(["find-generic-password", "-s", empty, "-g"]).stderr == "password: \n")
        #expect(try session.run(["find-generic-password", "-s", empty, "-w"]).stdout == "\n")
    }

    @Test func printBufferRendersAttributes() throws {
        let service = SharedSessions.unique("render")
        try session.ok(["add-generic-password", "-a", "jö", "-s", service, "-l", "a\\b", "-w", "x"])
        let found = try session.run(["find-generic-password", "-s", service])
        #expect(found.stdout.contains("    0x00000007 <blob>=0x615C62  \"a\\134b\"\n"))
        #expect(found.stdout.contains("    \"acct\"<blob>=0x6AC3B6  \"j\\303\\266\"\n"))
    }

    @Test func hexPasswords() throws {
        let service = SharedSessions.unique("hex")
        try session.ok(["add-generic-password", "-a", "a", "-s", service, "-X", "0001"])
        #expect(try session.run(["find-generic-password", "-s", service, "-g"]).stderr == "password: 0x0001 \n")
        let odd = SharedSessions.unique("odd")
        try session.ok(["add-generic-password", "-a", "a", "-s", odd, "-X", "fff"])
        #expect(try session.run(["find-generic-password", "-s", odd, "-w"]).stdout == "0fff\n")
        let bad = try session.run(["add-generic-password", "-a", "a", "-s", SharedSessions.unique("bad"), "-X", "zz"])
        #expect(bad.exit == 2)
        #expect(bad.stderr.hasPrefix("keywell: Unable to convert password data (-X must specify valid hex digits)\nUsage: add-generic-password "))
        // -p is the legacy spelling of -w.
        let legacy = SharedSessions.unique("legacy")
        try session.ok(["add-generic-password", "-a", "a", "-s", legacy, "-p", "old-style"])
        #expect(try session.run(["find-generic-password", "-s", legacy, "-w"]).stdout == "old-style\n")
    }

    @Test func duplicatesAndUpdates() throws {
        let service = SharedSessions.unique("dup")
        try session.ok(["add-generic-password", "-a", "a", "-s", service, "-w", "one", "-l", "custom"])
        let duplicate = try session.security(["add-generic-password", "-a", "a", "-s", service, "-w", "two"])
        #expect(duplicate.exit == 45)
        #expect(duplicate.stderr == "security: SecKeychainItemCreateFromContent (<default>): The specified item already exists in the keychain.\n")
        let named = try session.security(["add-generic-password", "-a", "a", "-s", service, "-w", "two", "login"])
        #expect(named.stderr == "security: SecKeychainItemCreateFromContent (login): The specified item already exists in the keychain.\n")

        // -U: new password, and the label is reset to the service.
        try session.ok(["add-generic-password", "-U", "-a", "a", "-s", service, "-w", "two", "-j", "note"])
        let updated = try session.run(["find-generic-password", "-s", service, "-g"])
        #expect(updated.stderr == "password: \"two\"\n")
        #expect(updated.stdout.contains("    0x00000007 <blob>=\"\(service)\"\n"))
        #expect(updated.stdout.contains("    \"icmt\"<blob>=\"note\"\n"))
        // -U without a password keeps the old one.
        try session.ok(["add-generic-password", "-U", "-a", "a", "-s", service, "-l", "again"])
        #expect(try session.run(["find-generic-password", "-s", service, "-w"]).stdout == "two\n")
        // -U with nothing to update adds.
        let fresh = SharedSessions.unique("fresh")
        try session.ok(["add-generic-password", "-U", "-a", "a", "-s", fresh, "-w", "new"])
        #expect(try session.run(["find-generic-password", "-s", fresh, "-w"]).stdout == "new\n")
    }

    @Test func addArgumentRules() throws {
        #expect(try session.run(["add-generic-password", "-s", "s", "-w", "p"]).exit == 2)
        #expect(try session.run(["add-generic-password", "-a", "a", "-w", "p"]).exit == 2)
        #expect(try session.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "p", "login", "login"]).exit == 2)
        #expect(try session.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "p", ""]).exit == 2)
        let missing = try session.run(["add-generic-password", "-a", "a", "-s", SharedSessions.unique("m"), "-w", "p", "nokc"])
        #expect(missing.exit == 50)
        #expect(missing.stderrLines.first == "keywell: SecKeychainItemCreateFromContent (nokc): The specified keychain could not be found.")
    }

    @Test func trailingDashWPromptsTwice() throws {
        let service = SharedSessions.unique("prompted")
        let result = try session.run(["add-generic-password", "-a", "a", "-s", service, "-w"], input: "typed pw\ntyped pw\n")
        #expect(result.exit == 0)
        #expect(result.stderr.contains("password data for new item: "))
        #expect(result.stderr.contains("retype password for new item: "))
        #expect(try session.run(["find-generic-password", "-s", service, "-w"]).stdout == "typed pw\n")
        let mismatch = try session.run(["add-generic-password", "-a", "a", "-s", SharedSessions.unique("mm"), "-w"],
                                       input: "a\nb\nc\nd\ne\nf\n")
        #expect(mismatch.exit == 1)
        #expect(mismatch.stderr.components(separatedBy: "passwords don't match").count == 4)
    }

    @Test func notFound() throws {
        let result = try session.run(["find-generic-password", "-s", SharedSessions.unique("nothing")])
        #expect(result.exit == 44)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "keywell: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")
    }

    @Test func deleteRemovesOnlyTheFirstMatch() throws {
        let service = SharedSessions.unique("del")
        try session.ok(["add-generic-password", "-a", "one", "-s", service, "-w", "1"])
        try session.ok(["add-generic-password", "-a", "two", "-s", service, "-w", "2"])
        let deleted = try session.security(["delete-generic-password", "-s", service])
        #expect(deleted.exit == 0)
        #expect(deleted.stdout.hasPrefix("keychain: \"\(login)\"\nversion: 512\nclass: \"genp\"\nattributes:\n"))
        #expect(deleted.stderr == "password has been deleted.\n")
        #expect(try session.run(["find-generic-password", "-s", service]).exit == 0)  // the other one
        try session.ok(["delete-generic-password", "-s", service])
        #expect(try session.run(["find-generic-password", "-s", service]).exit == 44)
        let missing = try session.run(["delete-generic-password", "-s", service])
        #expect(missing.exit == 44)
        #expect(missing.stderr == "keywell: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")
        // No filter at all: usage.
        let bare = try session.run(["delete-generic-password"])
        #expect(bare.exit == 2)
        #expect(bare.stderr.hasPrefix("Usage: delete-generic-password "))
    }

    @Test func searchesFollowTheKeychainArgumentsInOrder() throws {
        let first = try session.makeKeychain("first")
        let second = try session.makeKeychain("second")
        let service = SharedSessions.unique("order")
        try session.ok(["add-generic-password", "-a", "a", "-s", service, "-w", "in-first", first])
        try session.ok(["add-generic-password", "-a", "a", "-s", service, "-w", "in-second", second])
        #expect(try session.run(["find-generic-password", "-s", service, "-w", first, second]).stdout == "in-first\n")
        #expect(try session.run(["find-generic-password", "-s", service, "-w", second, first]).stdout == "in-second\n")
        // Keychains that do not exist are skipped.
        #expect(try session.run(["find-generic-password", "-s", service, "-w", "absent", second]).stdout == "in-second\n")
        let block = try session.run(["find-generic-password", "-s", service, second])
        #expect(block.stdout.hasPrefix("keychain: \"\(session.path(of: second))\"\n"))
        // Not in the search list (only login is): not found without arguments.
        #expect(try session.run(["find-generic-password", "-s", service]).exit == 44)
    }
}

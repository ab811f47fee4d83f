import Foundation
import Testing

/// add/find/delete-internet-password (docs/cli.md "Item blocks", "Password commands").
@Suite struct InternetPasswordTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }
    var login: String { session.path(of: "login") }

    @Test func defaultsPrintAsMacOSPrintsThem() throws {
        let server = SharedSessions.unique("plain.example")
        try session.ok(["add-internet-password", "-a", "alice", "-s", server, "-w", "pw"])
        let found = try session.run(["find-internet-password", "-s", server])
        #expect(found.exit == 0)
        // Label = server, atyp "dflt", port and protocol 0.
        #expect(found.maskedStdout == ExpectedBlock.internet(keychain: login, label: "\"\(server)\"", account: "\"alice\"",
                                                             server: "\"\(server)\""))
    }

    @Test func everyOptionIsStoredAndPrinted() throws {
        let server = SharedSessions.unique("full.example")
        try session.ok(["add-internet-password", "-a", "bob", "-s", server, "-w", "pw", "-r", "htps", "-P", "443",
                        "-p", "/repo", "-d", "CORP", "-t", "form", "-D", "kind", "-j", "note", "-c", "crea", "-C", "typ ",
                        "-l", "Label"])
        let found = try session.run(["find-internet-password", "-s", server])
        #expect(found.maskedStdout == ExpectedBlock.internet(
            keychain: login, label: "\"Label\"", account: "\"bob\"", server: "\"\(server)\"",
            authenticationType: "\"form\"", path: "\"/repo\"", port: "0x000001BB ", protocolCode: "\"htps\"",
            securityDomain: "\"CORP\"", kind: "\"kind\"", comment: "\"note\"", creator: "\"crea\"", type: "\"typ \""))
        // Port 80 has printable bytes in it.
        let http = SharedSessions.unique("http.example")
        try session.ok(["add-internet-password", "-a", "a", "-s", http, "-P", "80", "-r", "http"])
        #expect(try session.run(["find-internet-password", "-s", http]).stdout.contains("    \"port\"<uint32>=0x00000050  \"\\000\\000\\000P\"\n"))
        // Filters.
        for filter in [["-r", "htps"], ["-P", "443"], ["-p", "/repo"], ["-d", "CORP"], ["-t", "form"], ["-a", "bob"], ["-l", "Label"]] {
            #expect(try session.run(["find-internet-password", "-s", server, "-w"] + filter).stdout == "pw\n", "\(filter)")
        }
        #expect(try session.run(["find-internet-password", "-s", server, "-r", "http"]).exit == 44)
        // -P 0 (or junk) is no filter.
        #expect(try session.run(["find-internet-password", "-s", server, "-P", "junk", "-w"]).stdout == "pw\n")
    }

    @Test func duplicateLineNamesTheKeychainOrNULL() throws {
        let server = SharedSessions.unique("dup.example")
        try session.ok(["add-internet-password", "-a", "a", "-s", server, "-w", "pw"])
        let duplicate = try session.security(["add-internet-password", "-a", "a", "-s", server, "-w", "pw"])
        #expect(duplicate.exit == 45)
        #expect(duplicate.stderr == "security: SecKeychainAddInternetPassword <NULL>: The specified item already exists in the keychain.\n")
        // -U finds it (label defaults to the server) and updates.
        try session.ok(["add-internet-password", "-U", "-a", "a", "-s", server, "-w", "new"])
        #expect(try session.run(["find-internet-password", "-s", server, "-w"]).stdout == "new\n")
    }

    @Test func updateWithACustomLabelDoesNotFindTheItem() throws {
        // -U searches on every field given, the label included (default: the server), so an
        // item with a custom label is not found and the add fails as a duplicate [Q].
        let server = SharedSessions.unique("label.example")
        try session.ok(["add-internet-password", "-a", "a", "-s", server, "-w", "pw", "-l", "custom"])
        let result = try session.run(["add-internet-password", "-U", "-a", "a", "-s", server, "-w", "new"])
        #expect(result.exit == 45)
    }

    @Test func deleteWithAuthenticationTypeFilter() throws {
        let server = SharedSessions.unique("del.example")
        try session.ok(["add-internet-password", "-a", "a", "-s", server, "-w", "pw", "-t", "ntlm"])
        #expect(try session.run(["delete-internet-password", "-s", server, "-t", "form"]).exit == 44)
        let deleted = try session.run(["delete-internet-password", "-s", server, "-t", "ntlm"])
        #expect(deleted.exit == 0)
        #expect(deleted.stdout.contains("\"atyp\"<blob>=\"ntlm\""))
        #expect(deleted.stderr == "password has been deleted.\n")
        #expect(try session.run(["find-internet-password", "-s", server]).exit == 44)
    }

    @Test func allSevenKeyPartsSearchOnThoseOnly() throws {
        let server = SharedSessions.unique("seven.example")
        try session.ok(["add-internet-password", "-a", "a", "-s", server, "-w", "pw", "-r", "htps", "-P", "8443",
                        "-p", "/p", "-d", "dom", "-t", "dflt", "-j", "note"])
        // With the seven key parts, the wrong comment is ignored [Q].
        let found = try session.run(["find-internet-password", "-a", "a", "-s", server, "-r", "htps", "-P", "8443",
                                     "-p", "/p", "-d", "dom", "-t", "dflt", "-j", "other", "-w"])
        #expect(found.stdout == "pw\n")
        #expect(try session.run(["find-internet-password", "-s", server, "-j", "other"]).exit == 44)
    }
}

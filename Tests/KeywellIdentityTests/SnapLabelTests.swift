import KeywellIdentity
import Testing

/// The snap a caller runs in, from the AppArmor label the bus reports.
@Suite("Snap security labels")
struct SnapLabelTests {
    private func parse(_ text: String, nul: Bool = true) throws(IdentityError) -> SnapLabel.Parsed? {
        try SnapLabel.parse(Array(text.utf8) + (nul ? [0] : []))
    }

    @Test func enforcedAndComplainLabelsLoseTheirModeAndNUL() throws {
        #expect(try parse("snap.firefox.firefox (enforce)") == SnapLabel.Parsed(label: "snap.firefox.firefox", enforced: true))
        #expect(try parse("snap.firefox.firefox (complain)") == SnapLabel.Parsed(label: "snap.firefox.firefox", enforced: false))
        #expect(try parse("snap.lxd.hook.configure (enforce)", nul: false)?.label == "snap.lxd.hook.configure")
        let identity = ApplicationIdentity(.snap(label: "snap.firefox.firefox", enforced: true))
        #expect(identity.string == "snap:snap.firefox.firefox")
        #expect(identity.strength == .strong)
        #expect(identity.displayName == "firefox")
        #expect(ApplicationIdentity(.snap(label: "snap.firefox.firefox", enforced: false)).strength == .weak)
    }

    @Test func otherLabelsAreNotSnaps() throws {
        #expect(try parse("unconfined") == nil)
        #expect(try parse("/usr/bin/man (enforce)") == nil)
        #expect(try parse("unconfined_u:unconfined_r:unconfined_t:s0-s0:c0.c1023") == nil)
        #expect(try SnapLabel.parse([]) == nil)
    }

    @Test(arguments: ["snap.firefox (enforce)", "snap..firefox (enforce)", "snap.fire fox.firefox (enforce)",
                      "snap.firefox.firefox\u{0}x (enforce)", "snap.firefox.fire/fox (enforce)"])
    func labelsThatStartLikeASnapButAreNotOneAreRefused(label: String) {
        #expect(throws: IdentityError.self) { try parse(label) }
    }

    @Test func anOverlongLabelIsRefused() {
        #expect(throws: IdentityError.self) { try parse("snap.a." + String(repeating: "b", count: SnapLabel.maximumLength)) }
    }
}

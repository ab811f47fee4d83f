import KeywellProtocol
import Testing

/// Every Secret Service method's reach, the one rule of what a sandboxed or unidentified caller
/// may call (docs/secret-service.md, "Sandboxed callers"): what changes shared state is shared,
/// sessions and prompts are the caller's own, the rest reaches items.
@Suite struct CallReachTests {
    typealias SS = SecretServiceProtocol
    typealias Member = SecretServiceProtocol.Member

    private func isShared(_ reach: CallReach) -> Bool {
        if case .shared = reach { return true }
        return false
    }

    @Test func sharedCallsAreShared() {
        let shared: [(String, String)] = [
            (SS.serviceInterface, Member.createCollection), (SS.serviceInterface, Member.lock),
            (SS.serviceInterface, Member.lockService), (SS.serviceInterface, Member.setAlias),
            (SS.collectionInterface, Member.delete), (SS.gnomeKeyringInternalInterface, "ChangeWithMasterPassword"),
        ]
        for (interface, member) in shared {
            #expect(isShared(SS.reach(interface: interface, member: member)), "\(interface).\(member)")
        }
        #expect(SS.reach(interface: SS.serviceInterface, member: Member.setAlias)
            == .shared(action: "change which collection an alias names"))
    }

    @Test func sessionsAndPromptsAreTheCallers() {
        #expect(SS.reach(interface: SS.serviceInterface, member: Member.openSession) == .caller)
        #expect(SS.reach(interface: SS.sessionInterface, member: Member.close) == .caller)
        #expect(SS.reach(interface: SS.promptInterface, member: Member.prompt) == .caller)
        #expect(SS.reach(interface: SS.promptInterface, member: Member.dismiss) == .caller)
    }

    @Test func itemCallsReachItems() {
        let items: [(String?, String)] = [
            (SS.serviceInterface, Member.searchItems), (SS.serviceInterface, Member.unlock),
            (SS.serviceInterface, Member.getSecrets), (SS.serviceInterface, Member.readAlias),
            (SS.collectionInterface, Member.createItem), (SS.collectionInterface, Member.searchItems),
            (SS.itemInterface, Member.delete), (SS.itemInterface, Member.getSecret), (SS.itemInterface, Member.setSecret),
            (nil, Member.delete), ("org.freedesktop.DBus.Properties", "Get"),
        ]
        for (interface, member) in items {
            #expect(SS.reach(interface: interface, member: member) == .items, "\(interface ?? "nil").\(member)")
        }
    }
}

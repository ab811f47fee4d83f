import Foundation
import KeywellAccess
import KeywellIdentity
import KeywellProtocol
import Testing

/// A dialog that stays up until it is withdrawn (or released), and then answers Allow as it
/// closes: the gate must not take that for the person's answer.
final class WithdrawableAsker: AccessQuestionAsking, @unchecked Sendable {
    private let condition = NSCondition()
    private var closed = false
    private(set) var shown = 0

    func ask(_ question: AccessQuestion, timeoutSeconds: Int) -> AccessAnswer {
        Issue.record("a withdrawable question must come with its withdrawal")
        return .deny
    }

    func ask(_ question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal) -> AccessAnswer {
        withdrawal.whileShowing({
            condition.lock()
            defer { condition.unlock() }
            shown += 1
            condition.broadcast()
            while !closed { condition.wait() }
            closed = false
            return .allowOnce
        }, stop: { [self] in close() })
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `count` questions were shown (a hang guard only).
    func waitForShown(_ count: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(60)
        while shown < count {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }
}

private func program(_ name: String) -> ApplicationIdentity {
    ApplicationIdentity(.executable(path: "/usr/bin/\(name)", sha256: String(repeating: "a", count: 64), script: nil))
}

private func item(_ number: Int) -> AccessItem {
    AccessItem(keychain: "/k/login.keychain-db", reference: [UInt8(number)], label: "item \(number)")
}

@Suite("Access question withdrawal")
struct AccessWithdrawalTests {
    let app = AccessCaller(connection: ":1.10", identity: program("app"))

    @Test func aQuestionOnScreenWithdrawnIsDeniedAndNotRemembered() {
        let asker = WithdrawableAsker()
        let gate = AccessGate(asker: asker, persist: { _, _ in Issue.record("nothing is written") })
        let withdrawal = AccessWithdrawal()
        let asked = Thread.detachNewThreadResult { gate.ask(app, about: [item(1)], interactive: true, withdrawal: withdrawal) }
        #expect(asker.waitForShown(1))
        withdrawal.withdraw()
        #expect(asked.value == .deny)
        #expect(gate.verdict(for: app, item: item(1), list: .applications([])) == .mustAsk)
        // Within the burst window: a new question, not the withdrawn one's Deny.
        let again = AccessWithdrawal()
        let second = Thread.detachNewThreadResult { gate.ask(app, about: [item(1)], interactive: true, withdrawal: again) }
        #expect(asker.waitForShown(2))
        asker.close()
        #expect(second.value == .allowOnce)
    }

    @Test func aQueuedQuestionWithdrawnStopsWaiting() {
        let asker = ScriptedAsker([.allowOnce], hold: true)
        let gate = AccessGate(asker: asker, persist: { _, _ in })
        let other = AccessCaller(connection: ":1.60", identity: program("other"))
        let first = Thread.detachNewThreadResult { gate.ask(app, about: [item(1)], interactive: true) }
        #expect(asker.waitForQuestions(1))
        let withdrawal = AccessWithdrawal()
        let queued = Thread.detachNewThreadResult { gate.ask(other, about: [item(2)], interactive: true, withdrawal: withdrawal) }
        #expect(waitUntil { gate.waitingCount(for: other.connection) == 1 })
        withdrawal.withdraw()
        #expect(queued.value == .deny)
        asker.release()
        #expect(first.value == .allowOnce)
        #expect(asker.count == 1)
    }

    @Test func aRequestJoiningAnOpenQuestionStopsWaitingWhenItsOwnIsWithdrawn() {
        let asker = ScriptedAsker([.allowOnce], hold: true)
        let gate = AccessGate(asker: asker, persist: { _, _ in })
        let first = Thread.detachNewThreadResult { gate.ask(app, about: [item(1)], interactive: true) }
        #expect(asker.waitForQuestions(1))
        let withdrawal = AccessWithdrawal()
        let joined = Thread.detachNewThreadResult { gate.ask(app, about: [item(2)], interactive: true, withdrawal: withdrawal) }
        #expect(waitUntil { gate.waitingCount(for: app.connection) == 2 })
        withdrawal.withdraw()
        #expect(joined.value == .deny)
        // The question itself is still the person's to answer.
        asker.release()
        #expect(first.value == .allowOnce)
    }

    @Test func anAlreadyWithdrawnQuestionIsNeverShown() {
        let asker = ScriptedAsker([.allowOnce])
        let gate = AccessGate(asker: asker, persist: { _, _ in })
        let withdrawal = AccessWithdrawal()
        withdrawal.withdraw()
        #expect(gate.ask(app, about: [item(1)], interactive: true, withdrawal: withdrawal) == .deny)
        #expect(asker.count == 0)
    }
}

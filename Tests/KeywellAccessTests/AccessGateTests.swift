import Foundation
import KeywellAccess
import KeywellIdentity
import KeywellProtocol
import Testing

/// Answers access questions from a script, as a person would, and counts them. It can hold a
/// question open until released, so that tests can make requests arrive while it is up.
final class ScriptedAsker: AccessQuestionAsking, @unchecked Sendable {
    private let condition = NSCondition()
    private var answers: [AccessAnswer]
    private var held: Bool
    private(set) var questions: [AccessQuestion] = []
    private var showing = 0
    private(set) var mostAtOnce = 0

    init(_ answers: [AccessAnswer], hold: Bool = false) {
        self.answers = answers
        self.held = hold
    }

    func ask(_ question: AccessQuestion, timeoutSeconds: Int) -> AccessAnswer {
        condition.lock()
        defer { condition.unlock() }
        questions.append(question)
        showing += 1
        mostAtOnce = max(mostAtOnce, showing)
        condition.broadcast()
        while held { condition.wait() }
        showing -= 1
        return answers.isEmpty ? .deny : answers.removeFirst()
    }

    /// Waits until `count` questions were shown (a hang guard only).
    func waitForQuestions(_ count: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(60)
        while questions.count < count {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    func release() {
        condition.lock()
        held = false
        condition.broadcast()
        condition.unlock()
    }

    var count: Int { condition.lock(); defer { condition.unlock() }; return questions.count }
    var last: AccessQuestion? { condition.lock(); defer { condition.unlock() }; return questions.last }
}

/// What Always Allow wrote.
final class Written: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(String, [AccessItem])] = []
    func add(_ identity: String, _ items: [AccessItem]) { lock.withLock { entries.append((identity, items)) } }
    var all: [(String, [AccessItem])] { lock.withLock { entries } }
}

private func program(_ name: String, hash: Character = "a", script: ApplicationIdentity.Script? = nil) -> ApplicationIdentity {
    ApplicationIdentity(.executable(path: "/usr/bin/\(name)", sha256: String(repeating: hash, count: 64), script: script))
}

private func item(_ number: Int, keychain: String = "/k/login.keychain-db") -> AccessItem {
    AccessItem(keychain: keychain, reference: [UInt8(number & 0xff), UInt8(number >> 8)], label: "item \(number)")
}

/// Runs `body` on `count` threads at once and returns their results.
private func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = NSLock()
    nonisolated(unsafe) var collected: [T?] = Array(repeating: nil, count: count)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            let value = body(index)
            results.withLock { collected[index] = value }
            group.leave()
        }
    }
    group.wait()
    return collected.map { $0! }
}

@Suite("Access gate")
struct AccessGateTests {
    let app = AccessCaller(connection: ":1.10", identity: program("app"))

    @Test func verdictsFollowTheListAndTheCallersKind() {
        let gate = AccessGate(asker: ScriptedAsker([]), persist: { _, _ in })
        let own = AccessList.applications([app.identityString!])
        #expect(gate.verdict(for: app, item: item(1), list: own) == .allowed)
        #expect(gate.verdict(for: app, item: item(1), list: .anyApplication) == .allowed)
        #expect(gate.verdict(for: app, item: item(1), list: .applications([])) == .mustAsk)
        // The same path with other contents is another program.
        let replaced = AccessCaller(connection: ":1.11", identity: program("app", hash: "b"))
        #expect(gate.verdict(for: replaced, item: item(1), list: own) == .mustAsk)
        // An interpreter named alone trusts whatever script it runs; a named script only itself.
        let script = AccessCaller(connection: ":1.12", identity: program("python3", script: .file(path: "/h/t.py", sha256: String(repeating: "c", count: 64))))
        #expect(gate.verdict(for: script, item: item(1), list: .applications([program("python3").string])) == .allowed)
        #expect(gate.verdict(for: AccessCaller(connection: ":1.13", identity: program("python3")), item: item(1),
                             list: .applications([script.identityString!])) == .mustAsk)
        // Sandboxed callers do not see what does not name them, "any application" included.
        let sandboxed = AccessCaller(connection: ":1.14", identity: ApplicationIdentity(.flatpak(appID: "org.example.App")))
        #expect(gate.verdict(for: sandboxed, item: item(1), list: .anyApplication) == .hidden)
        #expect(gate.verdict(for: sandboxed, item: item(1), list: .applications(["flatpak:org.example.App"])) == .allowed)
        // An unidentifiable caller is trusted with nothing but items open to any application.
        let unknown = AccessCaller(connection: ":1.15", identity: nil)
        #expect(gate.verdict(for: unknown, item: item(1), list: .anyApplication) == .allowed)
        #expect(gate.verdict(for: unknown, item: item(1), list: own) == .mustAsk)
    }

    @Test func allowHoldsForTheProgramUntilItsKeychainLocksOrTheSessionEnds() {
        let asker = ScriptedAsker([.allowOnce, .allowOnce])
        let gate = AccessGate(asker: asker, persist: { _, _ in Issue.record("Allow must not write") })
        let list = AccessList.applications([])
        let other = item(3, keychain: "/k/work.keychain-db")
        #expect(gate.ask(app, about: [item(1), other], interactive: true) == .allowOnce)
        #expect(gate.verdict(for: app, item: item(1), list: list) == .allowed)
        #expect(gate.verdict(for: app, item: item(2), list: list) == .mustAsk)
        // The same program's next run (another connection) is not asked again, after the first left.
        gate.connectionLeft(app.connection)
        let nextRun = AccessCaller(connection: ":1.99", identity: app.identity)
        #expect(gate.verdict(for: nextRun, item: item(1), list: list) == .allowed)
        // Another program, or the same path with other contents, is.
        #expect(gate.verdict(for: AccessCaller(connection: ":1.98", identity: program("app", hash: "b")), item: item(1), list: list) == .mustAsk)
        // Locking the item's keychain ends it; the other keychain's item stays allowed.
        gate.keychainLocked(path: "/k/login.keychain-db")
        #expect(gate.verdict(for: nextRun, item: item(1), list: list) == .mustAsk)
        #expect(gate.verdict(for: nextRun, item: other, list: list) == .allowed)
        // The last login session closing ends every Allow.
        gate.sessionEnded()
        #expect(gate.verdict(for: nextRun, item: other, list: list) == .mustAsk)
        #expect(asker.count == 1)
    }

    /// An Allow names the program byte for byte: a program at "café" spelt in other bytes (an
    /// equal String, another file) is asked about, and locking a keychain at such a path ends
    /// only its own items' Allows.
    @Test func allowIsForThePathsExactBytes() {
        let gate = AccessGate(asker: ScriptedAsker([.allowOnce]), persist: { _, _ in })
        let list = AccessList.applications([])
        func at(_ path: String, _ connection: String) -> AccessCaller {
            AccessCaller(connection: connection, identity: ApplicationIdentity(.executable(path: path, sha256: String(repeating: "a", count: 64), script: nil)))
        }
        let composed = at("/home/me/caf\u{E9}", ":1.30")
        let decomposed = at("/home/me/cafe\u{301}", ":1.31")
        let composedKeychain = item(1, keychain: "/k/caf\u{E9}.keychain-db")
        let decomposedKeychain = item(1, keychain: "/k/cafe\u{301}.keychain-db")
        #expect(gate.ask(composed, about: [composedKeychain, decomposedKeychain], interactive: true) == .allowOnce)
        #expect(gate.verdict(for: composed, item: composedKeychain, list: list) == .allowed)
        #expect(gate.verdict(for: decomposed, item: composedKeychain, list: list) == .mustAsk)
        gate.keychainLocked(path: "/k/cafe\u{301}.keychain-db")
        #expect(gate.verdict(for: composed, item: decomposedKeychain, list: list) == .mustAsk)
        #expect(gate.verdict(for: composed, item: composedKeychain, list: list) == .allowed)
    }

    @Test func anUnidentifiedCallersAllowLastsOnlyItsConnection() {
        let gate = AccessGate(asker: ScriptedAsker([.allowOnce]), persist: { _, _ in })
        let unknown = AccessCaller(connection: ":1.20", identity: nil)
        let list = AccessList.applications([])
        #expect(gate.ask(unknown, about: [item(1)], interactive: true) == .allowOnce)
        #expect(gate.verdict(for: unknown, item: item(1), list: list) == .allowed)
        #expect(gate.verdict(for: AccessCaller(connection: ":1.21", identity: nil), item: item(1), list: list) == .mustAsk)
        gate.connectionLeft(unknown.connection)
        #expect(gate.verdict(for: unknown, item: item(1), list: list) == .mustAsk)
    }

    @Test func alwaysAllowWritesTheIdentityForEveryItemAsked() {
        let written = Written()
        let gate = AccessGate(asker: ScriptedAsker([.alwaysAllow]), persist: { written.add($0, $1) })
        #expect(gate.ask(app, about: [item(1), item(2), item(1)], interactive: true) == .alwaysAllow)
        #expect(written.all.count == 1)
        #expect(written.all.first?.0 == app.identityString)
        #expect(written.all.first?.1 == [item(1), item(2)])
    }

    @Test func anUnidentifiedCallerIsNeverOfferedAlwaysAllow() {
        let asker = ScriptedAsker([.alwaysAllow])
        let gate = AccessGate(asker: asker, persist: { _, _ in Issue.record("nothing to write for nobody") })
        let unknown = AccessCaller(connection: ":1.20", identity: nil)
        #expect(gate.ask(unknown, about: [item(1)], interactive: true) == .allowOnce)
        #expect(asker.last?.offersAlwaysAllow == false)
    }

    @Test func withoutInteractionNothingIsAsked() {
        let asker = ScriptedAsker([.allowOnce])
        let gate = AccessGate(asker: asker, persist: { _, _ in })
        #expect(gate.ask(app, about: [item(1)], interactive: false) == .deny)
        #expect(asker.count == 0)
    }

    @Test func aRequestWithoutInteractionDoesNotWaitForAnOpenQuestion() {
        let asker = ScriptedAsker([.allowOnce], hold: true)
        let gate = AccessGate(asker: asker, persist: { _, _ in })
        let first = Thread.detachNewThreadResult { gate.ask(app, about: [item(1)], interactive: true) }
        #expect(asker.waitForQuestions(1))
        #expect(gate.ask(app, about: [item(2)], interactive: false) == .deny)
        asker.release()
        #expect(first.value == .allowOnce)
        #expect(gate.verdict(for: app, item: item(2), list: .applications([])) == .mustAsk)
    }

    @Test func requestsWhileTheQuestionIsUpJoinIt() {
        let asker = ScriptedAsker([.allowOnce], hold: true)
        let gate = AccessGate(asker: asker, persist: { _, _ in })
        let first = Thread.detachNewThreadResult { gate.ask(app, about: [item(0)], interactive: true) }
        #expect(asker.waitForQuestions(1))
        // 99 more requests of the same connection while the dialog is up.
        let joined = Box<[AccessAnswer]>([])
        let group = DispatchGroup()
        for number in 1..<100 {
            group.enter()
            Thread.detachNewThread {
                let answer = gate.ask(app, about: [item(number)], interactive: true)
                joined.update { $0.append(answer) }
                group.leave()
            }
        }
        // Each joins before the answer: wait until they all wait (a hang guard, not a timing bound).
        #expect(waitUntil { gate.waitingCount(for: app.connection) == 100 })
        asker.release()
        group.wait()
        #expect(first.value == .allowOnce)
        #expect(joined.value.count == 99 && joined.value.allSatisfy { $0 == .allowOnce })
        #expect(asker.count == 1)
        for number in 0..<100 { #expect(gate.verdict(for: app, item: item(number), list: .applications([])) == .allowed) }
    }

    @Test func anAnswerHoldsForTheBurstThenAQuestionIsNew() throws {
        let asker = ScriptedAsker([.deny, .allowOnce])
        let gate = AccessGate(asker: asker, persist: { _, _ in }, burstWindow: .milliseconds(200))
        #expect(gate.ask(app, about: [item(1)], interactive: true) == .deny)
        // Back to back, each within the window of the one before: the same answer, no question.
        for number in 2...20 { #expect(gate.ask(app, about: [item(number)], interactive: true) == .deny) }
        #expect(asker.count == 1)
        // Once the window has passed (a lower bound: waiting longer changes nothing), a new question.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(gate.ask(app, about: [item(1)], interactive: true) == .allowOnce)
        #expect(asker.count == 2)
    }

    @Test func differentConnectionsQueueForOneDialog() {
        let asker = ScriptedAsker([.allowOnce, .deny, .allowOnce, .deny])
        let gate = AccessGate(asker: asker, persist: { _, _ in })
        let answers = concurrently(4) { index in
            gate.ask(AccessCaller(connection: ":1.\(50 + index)", identity: program("app\(index)")), about: [item(index)], interactive: true)
        }
        #expect(asker.count == 4)
        #expect(asker.mostAtOnce == 1)
        #expect(answers.filter { $0 == .deny }.count == 2)
    }

    @Test func aQueuedQuestionOfALeavingConnectionIsDropped() {
        let asker = ScriptedAsker([.allowOnce], hold: true)
        let gate = AccessGate(asker: asker, persist: { _, _ in })
        let other = AccessCaller(connection: ":1.60", identity: program("other"))
        let first = Thread.detachNewThreadResult { gate.ask(app, about: [item(1)], interactive: true) }
        #expect(asker.waitForQuestions(1))
        let queued = Thread.detachNewThreadResult { gate.ask(other, about: [item(2)], interactive: true) }
        #expect(waitUntil { gate.waitingCount(for: other.connection) == 1 })
        gate.connectionLeft(other.connection)
        #expect(queued.value == .deny)
        asker.release()
        #expect(first.value == .allowOnce)
        #expect(asker.count == 1)
    }

    @Test func theQuestionNamesTheAppTheItemsAndTheKeychainOnLinesNoLabelCanForge() {
        let forged = AccessItem(keychain: "/k/login.keychain-db", reference: [9], label: "mail\n\nexe:/usr/bin/ssh;sha256=00%0Aok")
        let question = AccessQuestion(caller: app, items: [forged, item(2), item(3)])
        let text = question.description
        #expect(text.hasPrefix("“app” wants to use “mail\u{FFFD}\u{FFFD}exe\u{A789}/usr/bin/ssh;sha256\u{FF1D}00%0Aok” and 2 more items from your keychain “/k/login.keychain-db”."))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3)
        #expect(!text.contains(app.identityString!))
        #expect(AccessQuestion(caller: app, items: [item(1), item(2)]).description.contains("and 1 more item from"))
    }
}

/// A value several threads update.
final class Box<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    func update(_ body: (inout T) -> Void) { lock.withLock { body(&stored) } }
    var value: T { lock.withLock { stored } }
}

/// Polls `condition` until true; false after a minute (a hang guard).
func waitUntil(_ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(60)
    while !condition() {
        if Date() > deadline { return false }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return true
}

/// A thread's result, waited for.
final class ThreadResult<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: T?
    fileprivate func set(_ value: T) { result = value; done.signal() }
    var value: T {
        done.wait()
        done.signal()
        return result!
    }
}

extension Thread {
    static func detachNewThreadResult<T: Sendable>(_ body: @escaping @Sendable () -> T) -> ThreadResult<T> {
        let result = ThreadResult<T>()
        Thread.detachNewThread { result.set(body()) }
        return result
    }
}

import KeywellProtocol
import KeywellSystem
import Logging

/// Decides who may use an item and asks the person when the item's list does not say
/// (docs/access-control.md "Who is asked", "No storm"). One per daemon, shared by the native
/// API and the Secret Service.
///
/// - `verdict` is the per-item check on every read: the list, then the caller's allowances (a
///   dictionary lookup, taken only when the list does not trust the caller). *Allow* lets that
///   identity use those items for the session: until their keychain locks, keywelld exits or the
///   user's last login session closes (`keychainLocked`, `sessionEnded`); a caller with no
///   identity keeps it for its connection only.
/// - `ask` blocks the calling worker until the person answers. One connection has at most one
///   question open: requests arriving meanwhile join it; after the answer, its requests within
///   `burstWindow` (renewed by each) get the same answer without a new question. Questions of
///   different connections queue: one dialog at a time.
public final class AccessGate: @unchecked Sendable {
    /// Writes Always Allow into the keychain files: the identity joins each item's list.
    public typealias Persist = @Sendable (_ identity: String, _ items: [AccessItem]) throws -> Void
    /// The other items of the same keychains whose access list is exactly that of one of `items`
    /// (and names at least one program): what one answer covers beyond the items asked about
    /// (docs/access-control.md, "One answer per program and list"). Labelled, with their lists.
    public typealias SameListItems = @Sendable (_ items: [AccessItem]) -> [AccessItem]

    /// How long a question waits, in the queue and on screen together, before it counts as Deny.
    public static let questionTimeoutSeconds = 300
    /// After an answer, further requests of the same connection within this time get the same
    /// answer; each request renews it. Long enough for a program that reads items one by one
    /// after another, short enough that a later, unrelated request is asked about afresh.
    public static let burstWindow: Duration = .seconds(3)

    private let asker: any AccessQuestionAsking
    private let persist: Persist
    private let sameList: SameListItems
    private let log: Logger
    private let naming: any ProgramNaming
    private let burstNanoseconds: UInt64
    private let timeoutSeconds: Int

    private let lock = ConditionLock()
    /// Items each grantee was allowed (Allow, or Always Allow while the file catches up), by
    /// `Grantee.key` (byte for byte: two spellings of a path are two programs).
    private var allowances: [ExactText: Set<AccessItem>] = [:]
    /// Each connection's open question or last answer.
    private var conversations: [String: Conversation] = [:]
    /// Questions waiting for the dialog, the first one on screen.
    private var queue: [PendingQuestion] = []
    private var questionsShown = 0
    /// The bus connection the connection names are about (weak: a closed one is not kept alive,
    /// and a new one is never taken for it).
    private weak var current: AnyObject?

    /// `naming`: what questions and denial lines call a program (its desktop entry's name).
    /// `sameList`: the items an answer covers along with those asked about (none by default).
    public init(asker: any AccessQuestionAsking, persist: @escaping Persist, log: Logger = Logger(label: "keywelld.access"),
                naming: any ProgramNaming = IdentityNamesOnly(), sameList: @escaping SameListItems = { _ in [] },
                burstWindow: Duration = AccessGate.burstWindow, timeoutSeconds: Int = AccessGate.questionTimeoutSeconds) {
        self.asker = asker
        self.persist = persist
        self.sameList = sameList
        self.log = log
        self.naming = naming
        self.burstNanoseconds = UInt64(max(0, burstWindow.components.seconds)) * 1_000_000_000
            + UInt64(max(0, burstWindow.components.attoseconds / 1_000_000_000))
        self.timeoutSeconds = max(1, timeoutSeconds)
    }

    // MARK: Deciding

    /// Whether `caller` may use `item`'s secret now. Cheap: no lock while the list trusts the caller.
    public func verdict(for caller: AccessCaller, item: AccessItem, list: AccessList) -> AccessVerdict {
        if list.trusts(caller) { return .allowed }
        if caller.isSandboxed { return .hidden }
        let allowed = lock.withLock { allowances[Grantee(caller).key]?.contains(item) ?? false }
        return allowed ? .allowed : .mustAsk
    }

    /// `verdict(for:item:list:)` that builds the item only when the list alone does not decide
    /// (the engine's screening: a trusted read builds nothing).
    public func verdict(for caller: AccessCaller, list: AccessList, item: () -> AccessItem) -> AccessVerdict {
        if list.trusts(caller) { return .allowed }
        return verdict(for: caller, item: item(), list: list)
    }

    /// Requests of `connection` waiting for the answer to its open question (tests, logs).
    public func waitingCount(for connection: String) -> Int {
        lock.withLock {
            if case .asking(let question)? = conversations[connection] { return question.waiting }
            return 0
        }
    }

    /// How many questions were put to the person since start (tests, `keywell doctor`).
    public var questionCount: Int { lock.withLock { questionsShown } }

    // MARK: Asking

    /// Asks the person whether `caller` may use `items`, and waits (at most
    /// `questionTimeoutSeconds`). Not from the D-Bus I/O thread. `interactive: false` answers
    /// `.deny` at once (it never waits for an open question) unless an answer of the same burst
    /// applies. Allow is remembered for the
    /// connection; Always Allow is also written through `persist`.
    ///
    /// `withdrawal`, when given, takes the question back (a dismissed Secret Service prompt): a
    /// request waiting for the dialog or for the answer stops waiting, the dialog closes, and the
    /// answer is `.deny`, remembered neither for the burst nor anywhere else.
    public func ask(_ caller: AccessCaller, about items: [AccessItem], interactive: Bool,
                    withdrawal: AccessWithdrawal? = nil) -> AccessAnswer {
        guard let withdrawal else { return ask(caller, about: items, interactive: interactive, unless: nil) }
        // Wakes this request's waits below; taken with the lock, so no wake-up is lost.
        return withdrawal.whileShowing(
            { ask(caller, about: items, interactive: interactive, unless: withdrawal) },
            stop: { [lock] in lock.withLock { lock.broadcast() } })
    }

    private func ask(_ caller: AccessCaller, about items: [AccessItem], interactive: Bool,
                     unless withdrawal: AccessWithdrawal?) -> AccessAnswer {
        func isWithdrawn() -> Bool { withdrawal?.isWithdrawn ?? false }
        var unique: [AccessItem] = []
        var seen = Set<AccessItem>()
        for item in items where seen.insert(item).inserted { unique.append(item) }
        guard !unique.isEmpty else { return .allowOnce }

        lock.lock()
        let now = monotonicNanoseconds()
        switch conversations[caller.connection] {
        case .answered(let answer, let until, var denial)? where until > now:
            // Items the burst's denial line did not name yet get a line of their own.
            let unreported = denial.map { denial in unique.filter { !denial.reported.contains($0) } } ?? []
            denial?.reported.formUnion(unreported)
            conversations[caller.connection] = .answered(answer, until: now + burstNanoseconds, denial: denial)
            if answer.allows { allowances[Grantee(caller).key, default: []].formUnion(unique) }
            lock.unlock()
            if answer == .alwaysAllow { write(answer, for: caller, unique) }
            if let denial, !unreported.isEmpty { reportDenial(caller, unreported, "\(denial.reason), moments ago (the same burst)") }
            return answer
        case .asking(let question)? where interactive:
            question.add(unique)
            question.waiting += 1
            while !question.isDone, !isWithdrawn() { lock.wait(untilNanoseconds: nil) }
            question.waiting -= 1
            lock.unlock()
            return question.isDone ? question.answer ?? .deny : .deny
        default:
            break
        }
        guard interactive else {
            lock.unlock()
            reportDenial(caller, unique, "the call does not allow asking (u_AuthUI) and the access lists do not name the program")
            return .deny
        }
        let question = PendingQuestion(caller: caller, items: unique)
        conversations[caller.connection] = .asking(question)
        queue.append(question)
        let deadline = now + UInt64(timeoutSeconds) * 1_000_000_000
        while queue.first !== question, question.answer == nil, monotonicNanoseconds() < deadline, !isWithdrawn() {
            lock.wait(untilNanoseconds: deadline)
        }
        guard queue.first === question, question.answer == nil, !isWithdrawn() else {
            // Timed out in the queue, withdrawn, or the caller left the bus meanwhile.
            if let index = queue.firstIndex(where: { $0 === question }) { queue.remove(at: index) }
            settle(question, .deny)
            let items = question.items
            lock.unlock()
            let why = isWithdrawn() ? Self.withdrawnReason
                : question.callerLeft ? "the program left before its question was shown"
                : "no answer within \(timeoutSeconds) s while another question was on screen"
            reportDenial(caller, items, why)
            return .deny
        }
        questionsShown += 1
        let asked = question.items
        lock.unlock()
        // Out of the lock: finding the companions reads the keychain files.
        let shown = AccessQuestion(caller: caller, items: asked, companions: companions(of: asked), naming: naming)

        let remaining = Int((deadline - min(deadline, monotonicNanoseconds())) / 1_000_000_000)
        let reply = asker.reply(to: shown, timeoutSeconds: max(1, remaining), withdrawal: withdrawal)
        var answer = reply.answer
        var denial = reply.denialReason ?? AccessReply.answeredDeny
        if answer == .alwaysAllow, !shown.offersAlwaysAllow { answer = .allowOnce }
        // Whatever the dialog said as it closed, a withdrawn question is not the person's answer.
        let withdrawn = isWithdrawn()
        if withdrawn {
            answer = .deny
            denial = Self.withdrawnReason
        }

        // Items that joined while the dialog was up get the same answer; later ones the burst's.
        lock.lock()
        let all = question.items
        let asking = Set(all)
        let covered = all + shown.companions.filter { !asking.contains($0) }
        question.answer = answer
        if withdrawn {
            if case .asking(let open)? = conversations[caller.connection], open === question {
                conversations[caller.connection] = nil
            }
        } else if !question.callerLeft {
            conversations[caller.connection] = .answered(answer, until: monotonicNanoseconds() + burstNanoseconds,
                                                         denial: answer == .deny ? BurstDenial(reason: denial, reported: Set(all)) : nil)
            if answer.allows { allowances[Grantee(caller).key, default: []].formUnion(covered) }
        }
        queue.removeAll { $0 === question }
        lock.broadcast()
        lock.unlock()

        if answer == .alwaysAllow { write(answer, for: caller, covered) }
        lock.withLock {
            question.isDone = true
            lock.broadcast()
        }
        log.info("access question answered", metadata: [
            "caller": "\(caller.identityString ?? "unidentified")", "items": "\(all.count)", "covered": "\(covered.count)",
            "answer": "\(answer)",
        ])
        if answer == .deny { reportDenial(caller, all, denial) }
        return answer
    }

    /// The items an answer about `asked` covers besides them: those `sameList` finds, less the
    /// asked ones, at most `maxCompanions` (what one question can promise in words).
    private func companions(of asked: [AccessItem]) -> [AccessItem] {
        var seen = Set(asked)
        var found: [AccessItem] = []
        for item in sameList(asked) where found.count < Self.maxCompanions && seen.insert(item).inserted { found.append(item) }
        return found
    }

    /// Items one answer covers beyond those asked about: a keychain's worth of one program's
    /// passwords; more are asked about when used.
    public static let maxCompanions = 10_000

    static let withdrawnReason = "the question was withdrawn (its prompt was dismissed)"

    /// The one line a denial writes (docs/access-control.md, "A denial is never silent"); not
    /// under the lock (the program name may read desktop entries).
    private func reportDenial(_ caller: AccessCaller, _ items: [AccessItem], _ reason: String) {
        let name = caller.identity.flatMap(naming.name(of:)) ?? caller.displayName
        log.notice("\(AccessDenialLine(programName: name, caller: caller, items: items, reason: reason).text)")
    }

    /// Always Allow into the files; a failure is logged and the answer still holds for this connection.
    private func write(_ answer: AccessAnswer, for caller: AccessCaller, _ items: [AccessItem]) {
        guard let identity = caller.identityString else { return }
        do {
            try persist(identity, items)
        } catch {
            log.error("cannot store Always Allow", metadata: ["caller": "\(identity)", "error": "\(error)"])
        }
    }

    /// Answers a question that never reached the screen (the lock held).
    private func settle(_ question: PendingQuestion, _ answer: AccessAnswer) {
        question.answer = answer
        question.isDone = true
        if case .asking(let open)? = conversations[question.caller.connection], open === question {
            conversations[question.caller.connection] = nil
        }
        lock.broadcast()
    }

    // MARK: Connections leaving

    /// Forgets `connection`'s answers, and its allowances when it has no identity: it left the
    /// bus. A question of it still waiting in the queue is dropped (Deny); one on screen
    /// finishes but is not remembered.
    public func connectionLeft(_ connection: String) {
        lock.withLock {
            allowances[Grantee.connection(connection).key] = nil
            switch conversations.removeValue(forKey: connection) {
            case .asking(let question)?:
                question.callerLeft = true
                if queue.first !== question, let index = queue.firstIndex(where: { $0 === question }) {
                    queue.remove(at: index)
                    settle(question, .deny)
                }
            default:
                break
            }
        }
    }

    /// The keychain at `path` locked: every *Allow* for its items ends (docs/access-control.md,
    /// "The question").
    public func keychainLocked(path: String) {
        lock.withLock {
            for (key, items) in allowances {
                let kept = items.filter { !$0.keychain.isExactly(path) }
                allowances[key] = kept.isEmpty ? nil : kept
            }
        }
    }

    /// The user's last login session closed: every *Allow* ends.
    public func sessionEnded() {
        lock.withLock { allowances.removeAll() }
    }

    /// Names callers after `bus`, the daemon's bus connection, from now on; true when it is
    /// another one than before, which forgets every connection name (a new bus numbers its
    /// connections afresh) and must then be followed: `connectionLeft` for each caller leaving it.
    public func follow(bus: AnyObject) -> Bool {
        lock.withLock { () -> Bool in
            guard current !== bus else { return false }
            current = bus
            // Connection names are the old bus's; identities stay the same programs.
            allowances = allowances.filter { Grantee.isIdentity($0.key) }
            conversations = conversations.filter { if case .asking = $0.value { true } else { false } }
            return true
        }
    }
}

/// Who an *Allow* is remembered for: the caller's identity, or its connection when it has none.
private enum Grantee {
    case identity(String)
    case connection(String)

    init(_ caller: AccessCaller) {
        self = caller.identityString.map(Grantee.identity) ?? .connection(caller.connection)
    }

    /// One dictionary key per grantee; the two kinds cannot collide (`exe:…` never starts with a space).
    var key: ExactText {
        switch self {
        case .identity(let identity): ExactText(identity)
        case .connection(let name): ExactText(" " + name)
        }
    }

    static func isIdentity(_ key: ExactText) -> Bool { !key.text.hasPrefix(" ") }
}

private enum Conversation {
    case asking(PendingQuestion)
    /// The last answer, which applies to the connection's requests until `until` (monotonic ns),
    /// and for a Deny, why and which items its log lines named.
    case answered(AccessAnswer, until: UInt64, denial: BurstDenial?)
}

/// A Deny that holds for a burst: its reason, and the items a denial line named already (each
/// denied item is logged once per burst; the set is at most the items asked about in it).
private struct BurstDenial {
    let reason: String
    var reported: Set<AccessItem>
}

/// One connection's open question; guarded by the gate's lock.
private final class PendingQuestion {
    let caller: AccessCaller
    private(set) var items: [AccessItem]
    private var known: Set<AccessItem>
    var answer: AccessAnswer?
    /// The answer is given and written: joined requests may return.
    var isDone = false
    var callerLeft = false
    /// Requests waiting for the answer: the one that opened the question and those that joined.
    var waiting = 1

    init(caller: AccessCaller, items: [AccessItem]) {
        self.caller = caller
        self.items = items
        self.known = Set(items)
    }

    func add(_ more: [AccessItem]) {
        for item in more where known.insert(item).inserted { items.append(item) }
    }
}

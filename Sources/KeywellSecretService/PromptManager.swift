import Foundation
import KeywellDBus
import KeywellProtocol
import Logging

/// What a prompt's work sees: a password dialog opened on first use, and whether the prompt was
/// dismissed meanwhile.
final class PromptContext: @unchecked Sendable {
    let windowID: String
    private let asker: any PasswordAsking
    private let lock = NSLock()
    private var conversation: (any PasswordConversation)?
    private var dismissed = false

    init(windowID: String, asker: any PasswordAsking) {
        self.windowID = windowID
        self.asker = asker
    }

    var isDismissed: Bool { lock.withLock { dismissed } }

    func ask(_ request: PasswordRequest, error: String? = nil) -> PasswordAnswer {
        let existing = lock.withLock { dismissed ? nil : conversation }
        if isDismissed { return .cancelled }
        let current: any PasswordConversation
        if let existing {
            current = existing
        } else {
            do {
                current = try asker.beginConversation(windowID: windowID)
            } catch {
                return .failed(error.description)
            }
            let keep = lock.withLock { () -> Bool in
                guard !dismissed else { return false }
                conversation = current
                return true
            }
            guard keep else {
                current.finish()
                return .cancelled
            }
        }
        return current.ask(request, error: error)
    }

    /// Dismiss: closes the dialog, so a pending `ask` returns `.cancelled`.
    func dismiss() {
        let current = lock.withLock { () -> (any PasswordConversation)? in
            dismissed = true
            return conversation
        }
        current?.cancel()
    }

    func finish() {
        let current = lock.withLock { () -> (any PasswordConversation)? in
            defer { conversation = nil }
            return conversation
        }
        current?.finish()
    }
}

/// Prompt objects (`/org/freedesktop/secrets/prompt/<n>`): each holds work that needs a person
/// (a password), runs it off the D-Bus threads when its owner calls `Prompt`, and ends with one
/// `Completed(dismissed, result)` signal. Dismissing (the `Dismiss` method, cancelling the dialog,
/// or the owner leaving the bus) completes with `dismissed = true` and an empty result of the
/// prompt's type (`ao` for Unlock, `o` for CreateCollection and CreateItem).
final class PromptManager: @unchecked Sendable {
    /// The work: the result to report, or nil when dismissed.
    typealias Work = @Sendable (PromptContext) -> DBusValue?

    private final class Entry: @unchecked Sendable {
        let number: UInt64
        let owner: String
        let emptyResult: DBusValue
        let work: Work
        var context: PromptContext?
        var completed = false

        init(number: UInt64, owner: String, emptyResult: DBusValue, work: @escaping Work) {
            self.number = number
            self.owner = owner
            self.emptyResult = emptyResult
            self.work = work
        }
    }

    /// The dialogs prompts show; the Secret portal shows its unlock dialog through it too.
    let asker: any PasswordAsking
    private let signals: SecretServiceSignals
    private let logger: Logger
    private let lock = NSLock()
    private var entries: [UInt64: Entry] = [:]
    /// Each owner's prompts not completed yet (how many it holds, and which to dismiss when it leaves).
    private var numbersByOwner: [String: Set<UInt64>] = [:]
    private var nextNumber: UInt64 = 1
    private let maximumPerOwner: Int

    init(asker: any PasswordAsking, signals: SecretServiceSignals, logger: Logger,
         maximumPerOwner: Int = ServiceLimits.promptsPerConnection) {
        self.asker = asker
        self.signals = signals
        self.logger = logger
        self.maximumPerOwner = maximumPerOwner
    }

    /// A new prompt; returns its path. An owner holding `ServiceLimits.promptsPerConnection`
    /// prompts not completed yet gets LimitsExceeded.
    func create(owner: String, emptyResult: DBusValue, work: @escaping Work) throws(DBusError) -> String {
        try lock.locked { () throws(DBusError) -> String in
            guard (numbersByOwner[owner]?.count ?? 0) < maximumPerOwner else {
                throw CallLimits.exceeded("This connection has \(maximumPerOwner) prompts not completed, the most one may have: "
                                          + "run or dismiss them first")
            }
            let entry = Entry(number: nextNumber, owner: owner, emptyResult: emptyResult, work: work)
            nextNumber += 1
            entries[entry.number] = entry
            numbersByOwner[owner, default: []].insert(entry.number)
            return ObjectPaths.promptPath(entry.number)
        }
    }

    func exists(_ number: UInt64) -> Bool { lock.withLock { entries[number] != nil } }

    /// `Prompt(window_id)`: checks the call; the returned closure starts the work (call it after
    /// replying, so the reply goes out before `Completed`).
    func start(_ number: UInt64, caller: String, windowID: String) throws(DBusError) -> @Sendable () -> Void {
        let entry = try lock.locked { () throws(DBusError) -> Entry in
            let entry = try owned(number, by: caller)
            guard entry.context == nil else {
                throw SecretServiceError.alreadyExists("Prompt \(ObjectPaths.promptPath(number)) is already showing")
            }
            entry.context = PromptContext(windowID: windowID, asker: asker)
            return entry
        }
        return { [self] in
            let thread = Thread { [self] in run(entry) }
            thread.name = "secret-service-prompt"
            thread.start()
        }
    }

    /// `Dismiss()`: the returned closure completes the prompt if the work was not running yet
    /// (call it after replying); running work stops at its dialog and completes by itself.
    func dismiss(_ number: UInt64, caller: String) throws(DBusError) -> @Sendable () -> Void {
        let entry = try lock.locked { () throws(DBusError) -> Entry in try owned(number, by: caller) }
        return dismissal(of: entry)
    }

    /// Dismisses the prompts of a client that left the bus.
    func dismissAll(ownedBy owner: String) {
        let owned = lock.withLock { (numbersByOwner[owner] ?? []).compactMap { entries[$0] } }
        owned.forEach { dismissal(of: $0)() }
    }

    func dismissAll() {
        let all = lock.withLock { Array(entries.values) }
        all.forEach { dismissal(of: $0)() }
    }

    private func dismissal(of entry: Entry) -> @Sendable () -> Void {
        let context = lock.withLock { entry.context }
        if let context {
            context.dismiss()
            return {}
        }
        return { [self] in complete(entry, dismissed: true, result: entry.emptyResult) }
    }

    private func owned(_ number: UInt64, by caller: String) throws(DBusError) -> Entry {
        guard let entry = entries[number], entry.owner == caller else {
            throw SecretServiceError.noSuchObject("No prompt \(ObjectPaths.promptPath(number)) of this connection")
        }
        return entry
    }

    private func run(_ entry: Entry) {
        guard let context = lock.withLock({ entry.context }) else { return }
        let result = entry.work(context)
        context.finish()
        if let result, !context.isDismissed {
            complete(entry, dismissed: false, result: result)
        } else {
            complete(entry, dismissed: true, result: entry.emptyResult)
        }
    }

    /// Sends `Completed` once and forgets the prompt.
    private func complete(_ entry: Entry, dismissed: Bool, result: DBusValue) {
        let first = lock.withLock { () -> Bool in
            guard !entry.completed else { return false }
            entry.completed = true
            entries[entry.number] = nil
            if var numbers = numbersByOwner[entry.owner] {
                numbers.remove(entry.number)
                numbersByOwner[entry.owner] = numbers.isEmpty ? nil : numbers
            }
            return true
        }
        guard first else { return }
        logger.debug("prompt \(entry.number) \(dismissed ? "dismissed" : "completed")")
        signals.promptCompleted(entry.number, owner: entry.owner, dismissed: dismissed, result: result)
    }
}

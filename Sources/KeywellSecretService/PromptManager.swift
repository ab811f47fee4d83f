import Foundation
import KeywellAccess
import KeywellDBus
import KeywellProtocol
import Logging

/// What a prompt's work sees: a password dialog opened on first use, and whether the prompt was
/// dismissed meanwhile.
// @unchecked: `conversation`, `dismissed` and `failure` are only touched under `lock`.
final class PromptContext: @unchecked Sendable {
    let windowID: String
    /// Withdrawn by Dismiss: an access question the work shows closes too.
    let withdrawal = AccessWithdrawal()
    private let asker: any PasswordAsking
    private let lock = NSLock()
    private var conversation: (any PasswordConversation)?
    private var dismissed = false
    private var failure: String?

    init(windowID: String, asker: any PasswordAsking) {
        self.windowID = windowID
        self.asker = asker
    }

    var isDismissed: Bool { lock.withLock { dismissed } }

    /// Why the work could not finish, in words a person can act on (no dialog could be shown,
    /// the keychain could not be made); nil when it finished or the person cancelled.
    var failureReason: String? { lock.withLock { failure } }

    func noteFailure(_ reason: String) { lock.withLock { failure = reason } }

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
                noteFailure("no password dialog could be shown: \(error.description)")
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
        withdrawal.withdraw()
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
// @unchecked: the table of prompts is only touched under `lock`.
final class PromptManager: @unchecked Sendable {
    /// The work: the result to report, or nil when dismissed.
    typealias Work = @Sendable (PromptContext) -> DBusValue?

    // @unchecked: its mutable fields are only touched under the manager's `lock`.
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
    /// Why each owner's last prompt ended dismissed, until it leaves the bus or a prompt of its
    /// completes: the error of its next call says it (docs/secret-service.md, "First store").
    private var lastDismissal: [String: String] = [:]
    private static let rememberedDismissals = 1_024

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

    /// Why no password dialog can be shown now (no display, no configured terminal, no
    /// pinentry); nil when one can. Calls that would only make a prompt that can never be
    /// answered ask this first and fail with the reason instead (docs/prompts.md).
    func unavailableReason() -> String? { asker.unavailableReason() }

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
        lock.withLock { lastDismissal[owner] = nil }
    }

    /// Why `owner`'s last prompt ended dismissed ("the password dialog was cancelled", "no
    /// password dialog could be shown: …"); nil when its last prompt completed, or it had none.
    func whyLastDismissed(owner: String) -> String? {
        lock.withLock { lastDismissal[owner] }
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
            // Dismiss (or the owner leaving) stops the dialog too: told apart from a person's Cancel.
            let reason = context.failureReason
                ?? (context.isDismissed ? "the prompt was dismissed" : "the password dialog was cancelled")
            complete(entry, dismissed: true, result: entry.emptyResult, reason: reason)
        }
    }

    /// Sends `Completed` once and forgets the prompt.
    private func complete(_ entry: Entry, dismissed: Bool, result: DBusValue,
                          reason: String = "the prompt was dismissed") {
        let first = lock.withLock { () -> Bool in
            guard !entry.completed else { return false }
            entry.completed = true
            if dismissed {
                // Only a hint for the owner's next error: a work that ends after its owner left
                // may leave one behind, so the table is emptied rather than let grow.
                if lastDismissal.count >= Self.rememberedDismissals { lastDismissal.removeAll() }
                lastDismissal[entry.owner] = reason
            } else {
                lastDismissal[entry.owner] = nil
            }
            entries[entry.number] = nil
            if var numbers = numbersByOwner[entry.owner] {
                numbers.remove(entry.number)
                numbersByOwner[entry.owner] = numbers.isEmpty ? nil : numbers
            }
            return true
        }
        guard first else { return }
        if dismissed {
            logger.info("prompt \(entry.number) of \(entry.owner) dismissed: \(reason)")
        } else {
            logger.debug("prompt \(entry.number) completed")
        }
        signals.promptCompleted(entry.number, owner: entry.owner, dismissed: dismissed, result: result)
    }
}

import Foundation
import KeywellAccess
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import Logging

/// What a prompt's work sees: a password dialog opened on first use, and whether the prompt was
/// dismissed meanwhile.
final class PromptContext: Sendable {
    let windowID: String
    /// Withdrawn by Dismiss: an access question the work shows closes too.
    let withdrawal = AccessWithdrawal()
    private let asker: any PasswordAsking
    private let state = Protected<State>(State())

    private struct State {
        var conversation: (any PasswordConversation)?
        var dismissed = false
        var failure: String?
    }

    init(windowID: String, asker: any PasswordAsking) {
        self.windowID = windowID
        self.asker = asker
    }

    var isDismissed: Bool { state.withLock { $0.dismissed } }

    /// Why the work could not finish, in words a person can act on (no dialog could be shown,
    /// the keychain could not be made); nil when it finished or the person cancelled.
    var failureReason: String? { state.withLock { $0.failure } }

    func noteFailure(_ reason: String) { state.withLock { $0.failure = reason } }

    func ask(_ request: PasswordRequest, error: String? = nil) -> PasswordAnswer {
        let existing = state.withLock { $0.dismissed ? nil : $0.conversation }
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
            let keep = state.withLock { state -> Bool in
                guard !state.dismissed else { return false }
                state.conversation = current
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
        let current = state.withLock { state -> (any PasswordConversation)? in
            state.dismissed = true
            return state.conversation
        }
        current?.cancel()
        withdrawal.withdraw()
    }

    func finish() {
        let current = state.withLock { state -> (any PasswordConversation)? in
            defer { state.conversation = nil }
            return state.conversation
        }
        current?.finish()
    }
}

/// Prompt objects (`/org/freedesktop/secrets/prompt/<n>`): each holds work that needs a person
/// (a password), runs it off the D-Bus threads when its owner calls `Prompt`, and ends with one
/// `Completed(dismissed, result)` signal. Dismissing (the `Dismiss` method, cancelling the dialog,
/// or the owner leaving the bus) completes with `dismissed = true` and an empty result of the
/// prompt's type (`ao` for Unlock, `o` for CreateCollection and CreateItem).
final class PromptManager: Sendable {
    /// The work: the result to report, or nil when dismissed.
    typealias Work = @Sendable (PromptContext) -> DBusValue?

    private struct Entry: Sendable {
        let number: UInt64
        let owner: String
        let emptyResult: DBusValue
        let work: Work
        /// Set by `Prompt`: the work runs (or ran) with it.
        var context: PromptContext?
    }

    /// The prompts not completed yet, only touched under the lock. A prompt leaves `entries`
    /// when it completes, so an entry missing there has completed.
    private struct Table {
        var entries: [UInt64: Entry] = [:]
        /// Each owner's prompts not completed yet (how many it holds, and which to dismiss when it leaves).
        var numbersByOwner: [String: Set<UInt64>] = [:]
        var nextNumber: UInt64 = 1
        /// Why each owner's last prompt ended dismissed, until it leaves the bus or a prompt of its
        /// completes: the error of its next call says it (docs/secret-service.md, "First store").
        var lastDismissal: [String: String] = [:]

        func owned(_ number: UInt64, by caller: String) throws(DBusError) -> Entry {
            guard let entry = entries[number], entry.owner == caller else {
                throw SecretServiceError.noSuchObject("No prompt \(ObjectPaths.promptPath(number)) of this connection")
            }
            return entry
        }
    }

    /// The dialogs prompts show; the Secret portal shows its unlock dialog through it too.
    let asker: any PasswordAsking
    private let signals: SecretServiceSignals
    private let logger: Logger
    private let table = Protected(Table())
    private let maximumPerOwner: Int
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
        try table.withLock { table throws(DBusError) -> String in
            guard (table.numbersByOwner[owner]?.count ?? 0) < maximumPerOwner else {
                throw CallLimits.exceeded("This connection has \(maximumPerOwner) prompts not completed, the most one may have: "
                                          + "run or dismiss them first")
            }
            let entry = Entry(number: table.nextNumber, owner: owner, emptyResult: emptyResult, work: work)
            table.nextNumber += 1
            table.entries[entry.number] = entry
            table.numbersByOwner[owner, default: []].insert(entry.number)
            return ObjectPaths.promptPath(entry.number)
        }
    }

    /// Why no password dialog can be shown now (no display, no configured terminal, no
    /// pinentry); nil when one can. Calls that would only make a prompt that can never be
    /// answered ask this first and fail with the reason instead (docs/prompts.md).
    func unavailableReason() -> String? { asker.unavailableReason() }

    func exists(_ number: UInt64) -> Bool { table.withLock { $0.entries[number] != nil } }

    /// `Prompt(window_id)`: checks the call; the returned closure starts the work (call it after
    /// replying, so the reply goes out before `Completed`).
    func start(_ number: UInt64, caller: String, windowID: String) throws(DBusError) -> @Sendable () -> Void {
        let (entry, context) = try table.withLock { table throws(DBusError) -> (Entry, PromptContext) in
            let entry = try table.owned(number, by: caller)
            guard entry.context == nil else {
                throw SecretServiceError.alreadyExists("Prompt \(ObjectPaths.promptPath(number)) is already showing")
            }
            let context = PromptContext(windowID: windowID, asker: asker)
            table.entries[number]?.context = context
            return (entry, context)
        }
        return { [self] in
            // pthread's default stack, as Foundation's Thread gave it before.
            startDetachedThread(name: "secret-service-prompt", stackSize: 8 << 20) { [self] in run(entry, context) }
        }
    }

    /// `Dismiss()`: the returned closure completes the prompt if the work was not running yet
    /// (call it after replying); running work stops at its dialog and completes by itself.
    func dismiss(_ number: UInt64, caller: String) throws(DBusError) -> @Sendable () -> Void {
        let entry = try table.withLock { table throws(DBusError) -> Entry in try table.owned(number, by: caller) }
        return dismissal(of: entry)
    }

    /// Dismisses the prompts of a client that left the bus.
    func dismissAll(ownedBy owner: String) {
        let owned = table.withLock { table in (table.numbersByOwner[owner] ?? []).compactMap { table.entries[$0] } }
        owned.forEach { dismissal(of: $0)() }
        table.withLock { $0.lastDismissal[owner] = nil }
    }

    /// Why `owner`'s last prompt ended dismissed ("the password dialog was cancelled", "no
    /// password dialog could be shown: …"); nil when its last prompt completed, or it had none.
    func whyLastDismissed(owner: String) -> String? {
        table.withLock { $0.lastDismissal[owner] }
    }

    func dismissAll() {
        let all = table.withLock { Array($0.entries.values) }
        all.forEach { dismissal(of: $0)() }
    }

    /// A prompt whose work runs is dismissed through its dialog (the work then completes it);
    /// one not started (or already completed) is completed here.
    private func dismissal(of entry: Entry) -> @Sendable () -> Void {
        if let context = table.withLock({ $0.entries[entry.number]?.context }) {
            context.dismiss()
            return {}
        }
        return { [self] in complete(entry, dismissed: true, result: entry.emptyResult) }
    }

    private func run(_ entry: Entry, _ context: PromptContext) {
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
        let first = table.withLock { table -> Bool in
            guard table.entries.removeValue(forKey: entry.number) != nil else { return false }
            if dismissed {
                // Only a hint for the owner's next error: a work that ends after its owner left
                // may leave one behind, so the table is emptied rather than let grow.
                if table.lastDismissal.count >= Self.rememberedDismissals { table.lastDismissal.removeAll() }
                table.lastDismissal[entry.owner] = reason
            } else {
                table.lastDismissal[entry.owner] = nil
            }
            if var numbers = table.numbersByOwner[entry.owner] {
                numbers.remove(entry.number)
                table.numbersByOwner[entry.owner] = numbers.isEmpty ? nil : numbers
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

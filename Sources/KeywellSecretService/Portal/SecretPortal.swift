import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The Secret portal's backend (`org.freedesktop.impl.portal.Secret` at
/// `/org/freedesktop/portal/desktop`): xdg-desktop-portal asks it for a sandboxed app's master
/// secret and passes the descriptor the app reads it from (docs/portal.md).
///
/// Served on keywelld's bus connection, so it answers under every name the daemon owns: its own
/// (`PortalNames.busName`, which `keywell.portal` names) and `org.freedesktop.secrets`, which
/// gnome-keyring's portal file names. Only the frontend's connection is served: an app that can
/// talk to the Secret Service directly must not ask for another app's secret by naming its id.
final class SecretPortal: DBusObject, PortalSecretMethods, PortalRequestMethods, Sendable {
    /// Calls in progress at once (each may wait for an unlock dialog); more get response 2.
    static let maximumCallsInProgress = ServiceLimits.portalCallsInProgress

    private let context: ServiceContext
    private let asker: any PasswordAsking
    private let secrets: AppSecrets
    private let logger: Logger
    /// The Request objects of calls in progress, by path.
    private let requests = Protected<[String: PendingRequest]>([:])
    /// One unlock dialog at a time: the calls behind it find the keychain open. Guards no value.
    private let unlocking = Protected(())

    init(context: ServiceContext) {
        self.context = context
        self.asker = context.prompts.asker
        self.secrets = AppSecrets(store: context.store)
        self.logger = context.logger
    }

    /// Exports the portal on `connection` and asks for `PortalNames.busName`.
    func attach(to connection: DBusConnection) {
        requests.withLock { $0.removeAll() }
        do {
            try connection.registerSubtree(self, at: PortalNames.objectPath)
            switch try connection.requestName(PortalNames.busName, flags: [.doNotQueue]) {
            case .primaryOwner, .alreadyOwner:
                logger.info("owning \(PortalNames.busName): serving the Secret portal")
            case .exists, .inQueue:
                logger.warning("\(PortalNames.busName) is owned by another connection: the Secret portal reaches Keywell only through \(SecretServiceNames.busName)")
            }
        } catch {
            logger.error("cannot serve the Secret portal: \(error.message)")
        }
    }

    // MARK: DBusObject

    func interfaces(at path: String) -> [DBusInterface]? {
        if path == PortalNames.objectPath { return [PortalInterfaces.secret] }
        return requests.withLock { $0.keys.contains(path) } ? [PortalInterfaces.request] : nil
    }

    func property(_ name: String, interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> DBusValue {
        guard path == PortalNames.objectPath, interface == PortalNames.secretInterface, name == PortalNames.Property.version else {
            throw .unknownProperty("No property \(interface).\(name)")
        }
        return .uint32(PortalNames.version)
    }

    /// The portal's object answers `Secret`; a request's object, `Request`.
    func handle(_ call: DBusMethodCall) {
        let context = context.callContext(call)
        call.reply { () throws(DBusError) in
            call.path == PortalNames.objectPath
                ? try dispatchPortalSecret(call, context: context) : try dispatchPortalRequest(call, context: context)
        }
    }

    func close(call: CallContext) throws(DBusError) {
        close(call.path)
    }

    // MARK: RetrieveSecret

    func retrieveSecret(handle: String, appId appText: String, fd: DBusDescriptorArgument, options: DBusValue,
                        call: CallContext) throws(DBusError) -> (response: UInt32, results: DBusValue) {
        call.replyMayHoldSecrets = false
        // Ours from here on: closed on every path, once the reply is out.
        var descriptor = fd.take()
        defer { if let descriptor { call.afterReply { Glibc.close(descriptor) } } }

        guard isFrontend(call) else {
            logger.warning("Secret portal: refused RetrieveSecret from \(Self.describe(call)), which is not \(PortalNames.frontendBusName)")
            throw .accessDenied("Only \(PortalNames.frontendBusName) may call \(PortalNames.secretInterface)")
        }
        guard handle.hasPrefix(PortalNames.requestPathPrefix) else {
            throw .invalidArgs("The request handle must be below \(PortalNames.requestPathPrefix)")
        }
        let app: PortalAppID
        do {
            app = try PortalAppID(appText)
        } catch {
            logger.warning("Secret portal: refused: \(error)")
            return answer(.failed)
        }
        guard let fd = descriptor else {
            logger.warning("Secret portal: no descriptor for \(app)")
            return answer(.failed)
        }
        guard begin(handle) else {
            logger.warning("Secret portal: refused \(app): \(Self.maximumCallsInProgress) calls already in progress, or \(handle) is in use")
            return answer(.failed)
        }
        defer { end(handle) }

        let response = serve(app, handle: handle) { secret throws(SecretHandOff.Failure) in
            descriptor = nil
            try SecretHandOff.write(secret, to: FileDescriptor(rawValue: fd))
        }
        return answer(response)
    }

    /// Finds or makes the app's secret, unlocking the keychain first when needed, and gives it
    /// to `handOff`.
    private func serve(_ app: PortalAppID, handle: String,
                       handOff: (Data) throws(SecretHandOff.Failure) -> Void) -> PortalNames.Response {
        let keychain: String
        do {
            let (name, locked) = try secrets.keychain()
            keychain = name
            if locked {
                let outcome = unlock(name, for: app, handle: handle)
                guard outcome == .success else { return outcome }
            }
        } catch {
            logger.error("Secret portal: no keychain for \(app)'s secret: \(error.wireMessage)")
            return .failed
        }
        var value: Data
        let created: Bool
        do {
            (value, created) = try secrets.secret(for: app, in: keychain)
        } catch {
            logger.error("Secret portal: cannot read or store \(app)'s secret in \"\(keychain)\": \(error.wireMessage)")
            return .failed
        }
        defer { value.resetBytes(in: 0..<value.count) }
        do {
            try handOff(value)
        } catch {
            logger.warning("Secret portal: \(app)'s secret was not delivered: \(error)")
            return .failed
        }
        logger.info("Secret portal: gave \(app) its secret\(created ? " (new, stored in \"\(keychain)\")" : "")")
        return .success
    }

    /// The normal unlock dialog (the Secret Service's), shown once at a time; the Request's
    /// `Close` dismisses it.
    private func unlock(_ keychain: String, for app: PortalAppID, handle: String) -> PortalNames.Response {
        unlocking.withLock { _ -> PortalNames.Response in
            if (try? context.store.locking.isLocked(keychain)) == false { return .success }
            // No dialog can be shown (no display, no configured terminal): say why at once rather
            // than start one that can only fail (docs/prompts.md).
            if let reason = asker.unavailableReason() {
                logger.error("Secret portal: \"\(keychain)\" is locked and no password dialog can be shown (\(reason)), so \(app) gets no secret; unlock it with `keywell unlock-keychain \(keychain)`")
                return .failed
            }
            let prompt = PromptContext(windowID: "", asker: asker)
            let stillWanted = requests.withLock { requests -> Bool in
                guard let request = requests[handle], !request.closed else { return false }
                requests[handle]?.prompt = prompt
                return true
            }
            guard stillWanted else {
                logger.notice("Secret portal: the request for \(app)'s secret was closed before \"\(keychain)\" could be unlocked")
                return .cancelled
            }
            defer { prompt.finish() }
            let opened = UnlockPrompt(context: context, requester: "The sandboxed app \(app)").run([keychain], prompt)
            if !opened.isEmpty { return .success }
            if prompt.isDismissed {
                logger.notice("Secret portal: the request for \(app)'s secret was closed while \"\(keychain)\" was locked")
                return .cancelled
            }
            logger.warning("Secret portal: \"\(keychain)\" stays locked, so \(app) gets no secret (unlock it with `keywell unlock-keychain`)")
            return .failed
        }
    }

    private func answer(_ response: PortalNames.Response) -> (response: UInt32, results: DBusValue) {
        (response.rawValue, .dictionary(keySignature: "s", valueSignature: "v", []))
    }

    // MARK: Request objects

    private func begin(_ handle: String) -> Bool {
        requests.withLock { requests in
            guard requests.count < Self.maximumCallsInProgress, requests[handle] == nil else { return false }
            requests[handle] = PendingRequest()
            return true
        }
    }

    private func end(_ handle: String) {
        _ = requests.withLock { $0.removeValue(forKey: handle) }
    }

    /// The frontend gave up on a request (the app closed it): its dialog goes away.
    private func close(_ handle: String) {
        let prompt = requests.withLock { requests -> PromptContext? in
            requests[handle]?.closed = true
            return requests[handle]?.prompt
        }
        prompt?.dismiss()
    }

    private func isFrontend(_ call: CallContext) -> Bool {
        guard !call.sender.isEmpty, let owner = try? call.connection.nameOwner(PortalNames.frontendBusName) else { return false }
        return owner == call.sender
    }

    private static func describe(_ call: CallContext) -> String {
        ServiceContext.describe(call.sender, on: call.connection).map { "\($0), bus connection \(call.sender)" }
            ?? "bus connection \(call.sender)"
    }
}

/// A call in progress, as its Request object: closed by the frontend, and the dialog it shows.
private struct PendingRequest {
    var closed = false
    var prompt: PromptContext?
}

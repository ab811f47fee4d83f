import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import Logging

/// Turns the engine's events into the native API's signals on the session bus. Events that happen
/// while there is no bus (a login before the session bus exists) are only logged.
final class SignalEmitter: Sendable {
    private let logger: Logger
    private let connection = Protected<DBusConnection?>(nil)

    init(logger: Logger) {
        self.logger = logger
    }

    /// The connection signals go out on, once it owns the bus name (nil: none).
    func use(_ connection: DBusConnection?) {
        self.connection.withLock { $0 = connection }
    }

    func emit(_ event: KeychainEvent) {
        let (member, argument) = Self.signal(for: event)
        logger.debug("signal \(member)")
        guard let connection = connection.withLock({ $0 }) else { return }
        do {
            try connection.emitSignal(path: KeywellNames.objectPath, interface: KeywellNames.interface,
                                      member: member, arguments: [argument])
        } catch {
            logger.warning("cannot send \(member): \(error.message)")
        }
    }

    static func signal(for event: KeychainEvent) -> (member: String, argument: DBusValue) {
        switch event {
        case .locked(let name): (NativeSignal.keychainLocked.name, .string(name))
        case .unlocked(let name): (NativeSignal.keychainUnlocked.name, .string(name))
        case .itemsChanged(let name): (NativeSignal.itemsChanged.name, .string(name))
        case .defaultKeychainChanged(let name): (NativeSignal.defaultKeychainChanged.name, .string(name))
        case .searchListChanged(let names): (NativeSignal.searchListChanged.name, .stringArray(names))
        }
    }
}

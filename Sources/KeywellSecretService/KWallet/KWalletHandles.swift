import KeywellProtocol
import KeywellSystem

/// The handles KWallet clients hold (docs/kwallet.md, "Handles"): one per wallet and application
/// id, as kwalletd gives them, counting the opens of each bus connection so that `close` and a
/// client leaving the bus take back only what that client opened. A handle names the keychain it
/// was opened on and the wallet name the client used (signals speak that name).
final class KWalletHandles: Sendable {
    struct Handle: Sendable, Equatable {
        let number: Int32
        let wallet: String
        let keychain: String
        let appID: String
        /// Opens not closed yet, by bus connection.
        var opens: [String: Int]
    }

    private let table = Protected<[Int32: Handle]>([:])

    /// The handle of `appID` on `wallet` (a new one, or the one it has) with one more open by
    /// `connection`; nil when `KWalletLimits.openHandles` are open.
    func open(wallet: String, keychain: String, appID: String, connection: String) -> Int32? {
        table.withLock { table in
            if let existing = table.values.first(where: { $0.wallet == wallet && $0.appID == appID && $0.keychain == keychain }) {
                table[existing.number]?.opens[connection, default: 0] += 1
                return existing.number
            }
            guard table.count < KWalletLimits.openHandles else { return nil }
            var number: Int32
            repeat { number = Int32.random(in: 1...Int32.max) } while table[number] != nil
            table[number] = Handle(number: number, wallet: wallet, keychain: keychain, appID: appID, opens: [connection: 1])
            return number
        }
    }

    /// The handle when `appID` holds it (kwalletd checks the application id, not the connection).
    func handle(_ number: Int32, appID: String) -> Handle? {
        table.withLock { table in table[number].flatMap { $0.appID == appID ? $0 : nil } }
    }

    func exists(_ number: Int32) -> Bool { table.withLock { $0[number] != nil } }

    enum Closing: Equatable {
        /// No such handle (kwalletd's −1).
        case unknown
        /// The handle is another application's (kwalletd's 1: not closed).
        case notHolder
        /// One open taken back; others keep it (1).
        case stillOpen
        /// The handle is gone (0).
        case closed(Handle)
    }

    /// Takes back one open of `connection` (or of any connection, if it has none); with `force`,
    /// all of them.
    func close(_ number: Int32, appID: String, connection: String, force: Bool) -> Closing {
        table.withLock { table in
            guard var handle = table[number] else { return .unknown }
            guard handle.appID == appID else { return .notHolder }
            if force {
                handle.opens = [:]
            } else {
                let opener = handle.opens[connection] != nil ? connection : handle.opens.keys.first
                if let opener {
                    handle.opens[opener, default: 1] -= 1
                    if handle.opens[opener] == 0 { handle.opens[opener] = nil }
                }
            }
            guard handle.opens.isEmpty else {
                table[number] = handle
                return .stillOpen
            }
            table[number] = nil
            return .closed(handle)
        }
    }

    /// Drops every handle `matching` says (a keychain that locked, was deleted, or an
    /// application disconnected); returns them.
    func remove(where matching: (Handle) -> Bool) -> [Handle] {
        table.withLock { table in
            let gone = table.values.filter(matching)
            for handle in gone { table[handle.number] = nil }
            return gone
        }
    }

    /// Takes back every open of a connection that left the bus; returns the handles that went.
    func connectionLeft(_ connection: String) -> [Handle] {
        table.withLock { table in
            var gone: [Handle] = []
            for (number, var handle) in table where handle.opens[connection] != nil {
                handle.opens[connection] = nil
                if handle.opens.isEmpty {
                    table[number] = nil
                    gone.append(handle)
                } else {
                    table[number] = handle
                }
            }
            return gone
        }
    }

    func all() -> [Handle] { table.withLock { Array($0.values) } }
}

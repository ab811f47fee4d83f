import Foundation

/// What the daemon's timers call: idle locking and locking for sleep.
extension KeychainStore {
    /// Locks every unlocked keychain whose `lockAfterSeconds` passed since its last use.
    /// Returns their names; a `locked` event goes out for each.
    func lockIdleKeychains(now: Date = Date()) -> [String] {
        lockEach { $0.lockIfIdle(now: now) }
    }

    /// Locks every unlocked keychain set to lock on sleep.
    func lockForSleep() -> [String] {
        lockEach { $0.lockForSleep() }
    }

    /// Locks the open keychains set to lock when the screen locks; returns their names.
    func lockForScreenLock() -> [String] {
        lockEach { $0.lockForScreenLock() }
    }

    /// The earliest time a keychain would lock for idleness, so the daemon can sleep until then.
    func nextIdleDeadline() -> Date? {
        allOpenFiles.compactMap { $0.idleDeadline }.min()
    }

    private func lockEach(_ lock: (KeychainFile) -> Bool) -> [String] {
        let locked = allOpenFiles.filter(lock)
        // A locked keychain's file alone holds every item (docs/cli.md, "Backing up").
        for file in locked { file.database.settleAfterLock() }
        let names = locked.map { $0.location.displayName }
        emit(names.map { .locked($0) })
        return names
    }
}

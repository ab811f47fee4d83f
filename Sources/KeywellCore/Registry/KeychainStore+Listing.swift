import Foundation
import KeywellProtocol

/// Whether keychains exist, and whether the list of them may have changed since a caller last
/// looked: what a face that shows keychains as objects (the Secret Service's collections) keeps
/// its list by.
extension KeychainStore {
    /// Whether the keychain exists (a name or path that cannot name one does not).
    public func keychainExists(_ nameOrPath: String) -> Bool {
        guard let location = try? location(nameOrPath) else { return false }
        return (try? existingFile(at: location)) != nil
    }

    /// What a kept list of keychains was checked against: valid while inotify reports no change
    /// in the keychains folder, in the config folder (settings.json: default keychain, search
    /// list) or on the way to either.
    public struct KeychainListingMark: Sendable {
        fileprivate let mark: PathChangeWatch.Mark
    }

    /// Take it before listing the keychains (a change while listing then counts); nil when the
    /// folders cannot be watched, and the list must be checked every time.
    public func keychainListingMark() -> KeychainListingMark? {
        // Marks only move forward, so the first is the one to compare against.
        guard let folder = changes.mark(watchingFolder: resolver.keychainsDirectory, edits: false),
              changes.mark(watching: userSettings.path, edits: true) != nil
        else { return nil }
        return KeychainListingMark(mark: folder)
    }

    /// True when nothing that could change the list of keychains happened since `mark`: one
    /// read of the inotify queue instead of looking at the folder and the settings file.
    public func keychainListingIsUnchanged(since mark: KeychainListingMark?) -> Bool {
        guard let mark else { return false }
        return changes.isUnchanged(since: mark.mark)
    }
}

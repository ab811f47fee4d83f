import Foundation
import KeywellProtocol

/// Whether keychains exist, and whether the list of them may have changed since a caller last
/// looked: what a face that shows keychains as objects (the Secret Service's collections) keeps
/// its list by.
extension OpenKeychains {
    /// Whether the keychain exists (a name or path that cannot name one does not).
    func keychainExists(_ nameOrPath: String) -> Bool {
        guard let location = try? location(nameOrPath) else { return false }
        return (try? existingFile(at: location)) != nil
    }

    /// Take it before listing the keychains (a change while listing then counts); nil when the
    /// folders cannot be watched, and the list must be checked every time.
    func keychainListingMark() -> PathChangeWatch.Mark? {
        // Marks only move forward, so the first is the one to compare against.
        guard let folder = changes.mark(watchingFolder: resolver.keychainsDirectory, edits: false),
            changes.mark(watching: userSettings.path, edits: true) != nil
        else { return nil }
        return folder
    }
}

import Foundation
import KeywellProtocol

/// The registry's listing calls (`OpenKeychains+Listing.swift`) under the names the faces call.
extension KeychainStore {
    /// Whether the keychain exists (a name or path that cannot name one does not).
    func keychainExists(_ nameOrPath: String) -> Bool {
        keychains.keychainExists(nameOrPath)
    }

    /// What a kept list of keychains was checked against: valid while inotify reports no change
    /// in the keychains folder, in the config folder (settings.json: default keychain, search
    /// list) or on the way to either.
    public struct KeychainListingMark: Sendable {
        fileprivate let mark: PathChangeWatch.Mark
    }

    /// Take it before listing the keychains (a change while listing then counts); nil when the
    /// folders cannot be watched, and the list must be checked every time.
    func keychainListingMark() -> KeychainListingMark? {
        keychains.keychainListingMark().map(KeychainListingMark.init(mark:))
    }

    /// True when nothing that could change the list of keychains happened since `mark`: one
    /// read of the inotify queue instead of looking at the folder and the settings file.
    func keychainListingIsUnchanged(since mark: KeychainListingMark?) -> Bool {
        guard let mark else { return false }
        return changes.isUnchanged(since: mark.mark)
    }
}

extension KeychainStore {
    /// The file a keychain's output name stands for (a name in the keychains folder, or an
    /// absolute path), as events and lists name keychains; no file is looked at.
    func keychainFilePath(forOutputName name: String) -> String? {
        try? KeychainResolver(keychainsDirectory: paths.keychainsDirectory.path).location(for: name).path
    }
}

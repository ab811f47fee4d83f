
#if canImport(Glibc)
import Glibc
#endif

/// The names people know programs by: `Name=` of the desktop entries in
/// `$XDG_DATA_HOME/applications`, then each `$XDG_DATA_DIRS` folder's `applications`
/// (docs/access-control.md, "The words"). Looked up by the program's real path: an entry's
/// `TryExec`, else the first word of its `Exec`, resolved through `PATH` and symbolic links.
///
/// A lookup costs one `stat` per folder: the folders are read again only when one of their
/// modification times changed (an entry added, removed or renamed), and never more than
/// `maxEntries` files of at most `maxEntryBytes` each.
public final class DesktopEntryNames: Sendable {
    /// Desktop entries read in one scan, over every folder: a desktop holds a few hundred.
    public static let maxEntries = 4096
    /// Bytes of one entry read: `Name=` and `Exec=` sit in the first group, near the top.
    public static let maxEntryBytes = 64 * 1024
    /// Folders searched: the data home and at most this many data folders less one.
    public static let maxFolders = 16

    private let folders: [String]
    private let searchPath: [String]
    private let locale: DesktopLocale
    private let scanned = Protected(Scan())

    private struct Scan {
        /// Each folder's modification time when it was read (nil: missing).
        var stamps: [timespec?] = []
        var names: [String: String] = [:]
        var byID: [String: String] = [:]
    }

    /// `environment`: keywelld's own (`XDG_DATA_HOME`, `XDG_DATA_DIRS`, `HOME`, `PATH`, and the
    /// locale variables `LC_ALL`, `LC_MESSAGES`, `LANG` that pick a translated `Name[…]=`).
    public init(environment: [String: String]) {
        func absolute(_ key: String) -> String? {
            guard let value = environment[key], value.hasPrefix("/") else { return nil }
            return value
        }
        let home = absolute("HOME").map { $0 + "/.local/share" }
        let dataHome = absolute("XDG_DATA_HOME") ?? home
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        folders = Array(([dataHome].compactMap { $0 } + dataDirs).map { $0 + "/applications" }.prefix(Self.maxFolders))
        searchPath = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        locale = DesktopLocale(environment: environment)
    }

    /// The name of the first entry whose program is `path` (a real path: symlinks resolved).
    public func name(ofProgram path: String) -> String? {
        current().names[path]
    }

    /// The name of the entry `<id>.desktop` (a Flatpak app's entry is named by its app id).
    public func name(ofEntry id: String) -> String? {
        current().byID[id]
    }

    private func current() -> Scan {
        let stamps = folders.map(Self.modificationTime)
        return scanned.withLock { scan in
            if scan.stamps.count != stamps.count || !zip(scan.stamps, stamps).allSatisfy(Self.same) {
                scan = read(stamps)
            }
            return scan
        }
    }

    private func read(_ stamps: [timespec?]) -> Scan {
        var scan = Scan(stamps: stamps)
        var seenIDs = Set<String>()
        var budget = Self.maxEntries
        for folder in folders {
            for file in Self.entryFiles(in: folder, atMost: budget) {
                budget -= 1
                // An entry of the same id earlier in the order hides this one (the spec's rule).
                guard seenIDs.insert(file).inserted,
                      let text = Self.readPrefix(folder + "/" + file, limit: Self.maxEntryBytes),
                      let entry = DesktopEntry(parsing: text, locale: locale), let name = entry.name else { continue }
                let id = String(file.dropLast(".desktop".count))
                if scan.byID[id] == nil { scan.byID[id] = name }
                if let program = entry.program.flatMap(resolved), scan.names[program] == nil { scan.names[program] = name }
            }
            if budget <= 0 { break }
        }
        return scan
    }

    /// `word` as the program it starts: looked up in `PATH` when it has no `/`, symlinks resolved.
    private func resolved(_ word: String) -> String? {
        let candidates = word.contains("/") ? [word] : searchPath.map { $0 + "/" + word }
        for candidate in candidates where candidate.hasPrefix("/") && access(candidate, X_OK) == 0 {
            guard let real = realpath(candidate, nil) else { continue }
            defer { free(real) }
            return String(cString: real)
        }
        return nil
    }

    private static func entryFiles(in folder: String, atMost limit: Int) -> [String] {
        guard limit > 0, let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while names.count < limit, let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".desktop"), !name.hasPrefix(".") { names.append(name) }
        }
        // Directory order is the file system's; sorted, the first entry is the same every time.
        return names.sorted()
    }

    private static func readPrefix(_ path: String, limit: Int) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        var bytes = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let read = bytes[count...].withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { break }
            count += read
        }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }

    private static func modificationTime(_ folder: String) -> timespec? {
        var status = stat()
        guard stat(folder, &status) == 0 else { return nil }
        return status.st_mtim
    }

    private static func same(_ left: timespec?, _ right: timespec?) -> Bool {
        switch (left, right) {
        case (nil, nil): true
        case (let left?, let right?): left.tv_sec == right.tv_sec && left.tv_nsec == right.tv_nsec
        default: false
        }
    }
}

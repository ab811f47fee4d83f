import Foundation
import KeywellSystem

/// Says whether a file checked earlier may have changed since, from inotify, so the engine can
/// skip re-checking a keychain file and the settings file on every call (a stat and a geteuid
/// each, the largest part of a lookup's cost outside SQLite) and still notice a file replaced,
/// deleted, re-moded, re-owned or edited behind its back.
///
/// A watched file's folder reports every change inside it; each folder on the way there reports
/// the one entry that leads on, so a folder renamed or swapped for a symlink anywhere on the path
/// counts as a change too. Any such event moves `generation` on; a change on the way also drops
/// every watch (they may now watch the wrong folders), to be made afresh at the next check.
/// inotify queues an event within the system call that makes the change, so reading the queue
/// at each call sees every change made before the call. When inotify is unavailable or a folder
/// cannot be watched there is no mark, and callers check every time as before. Mounts over a
/// path are not seen (only root can make them).
final class PathChangeWatch: Sendable {
    /// What a check was made against: nothing changed while `generation` stays the same.
    struct Mark: Equatable, Sendable {
        fileprivate let generation: UInt64
    }

    fileprivate struct Watch {
        /// The entries that matter in this folder; nil for the folder holding watched files.
        var entries: Set<String>?
        var mask: UInt32

        /// Reports `mask`'s events for `entry` (nil: for every entry) already.
        func covers(mask: UInt32, entry: String?) -> Bool {
            guard self.mask & mask == mask else { return false }
            guard let entries else { return true }
            return entry.map(entries.contains) ?? false
        }

        mutating func widen(mask: UInt32, entry: String?) {
            self.mask |= mask
            if let entry { entries?.insert(entry) } else { entries = nil }
        }
    }

    /// nil when inotify is unavailable (there is then never a mark).
    private let descriptor: FileDescriptor?
    private let table: Protected<WatchTable>
    /// The table's read buffer, owned here so that it is freed with the watch.
    private nonisolated(unsafe) let events: UnsafeMutableRawBufferPointer
    fileprivate static let eventBufferSize = 16 * 1024

    /// The inotify descriptor's watches and what they reported, only touched under the lock.
    fileprivate struct WatchTable {
        /// The inotify descriptor (`PathChangeWatch.descriptor`; only used when there is one).
        let descriptor: FileDescriptor
        /// Where the queue is read into, made once (`eventBufferSize` bytes) and used under the
        /// lock only: a buffer made per read was a heap allocation on every call that checks a
        /// file, being past what Swift keeps on the stack (docs/performance.md, "The per-call
        /// path, counted again").
        let events: UnsafeMutableRawBufferPointer
        var generation: UInt64 = 0
        /// How many times every watch was dropped.
        var resets = 0
        var watches: [Int32: Watch] = [:]
        /// Byte for byte: two spellings of "café" are two folders.
        var descriptorsByPath: [ExactText: Int32] = [:]
    }

    /// Events on a folder's entries that can replace or re-mode a file, or change the folder itself.
    fileprivate static let folderEvents = UInt32(
        IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)
    /// The same for folders on the way: only renames, deletions and creations matter there.
    fileprivate static let pathEvents = UInt32(
        IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
    /// Events after which a watch no longer watches what it was made for.
    fileprivate static let watchGone = UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_Q_OVERFLOW)

    init() {
        descriptor = try? FileDescriptor.inotify()
        events = .allocate(byteCount: descriptor == nil ? 0 : Self.eventBufferSize, alignment: 8)
        table = Protected(WatchTable(descriptor: descriptor ?? FileDescriptor(rawValue: -1), events: events))
    }

    deinit {
        try? descriptor?.close()
        events.deallocate()
    }

    /// Watches `path`'s folder and the way to it, then returns the mark a check of `path` made
    /// from now on is valid for. Take it *before* checking, so a change during the check counts.
    /// `edits`: also count writes to files in place (settings.json edited by hand), which a
    /// keychain folder leaves out because SQLite writes its files all the time.
    func mark(watching path: String, edits: Bool) -> Mark? {
        mark(watchingFolder: (path as NSString).deletingLastPathComponent, edits: edits)
    }

    /// The same for everything in `folder` (a listing of it, say).
    func mark(watchingFolder folder: String, edits: Bool) -> Mark? {
        guard descriptor != nil else { return nil }
        return table.withLock { table -> Mark? in
            // Events queued before the watches were (re)made may drop them all: make them again.
            for _ in 0..<3 {
                guard table.watchPath(to: folder, edits: edits) else { return nil }
                let resetsBefore = table.resets
                table.drainEvents()
                if table.resets == resetsBefore { return Mark(generation: table.generation) }
            }
            return nil  // the way keeps changing: check every time
        }
    }

    /// True when nothing that could affect the file behind `mark` changed since it was taken.
    /// Inside `FileChecks.oncePerCall`, only the first check of the call reads the queue.
    func isUnchanged(since mark: Mark?) -> Bool {
        guard let mark else { return false }
        let drains = FileChecks.firstCheck(of: self)
        return table.withLock { table in
            if drains { table.drainEvents() }
            return table.generation == mark.generation
        }
    }
}

/// One call's file checks: the inotify queue is read once per call, not once per file checked
/// (finding the default keychain checks the settings file, the listing and the open keychain,
/// each an empty `read` before). Correct because inotify queues an event within the system call
/// that makes the change: the call's first read sees every change made before the call arrived,
/// and a change made while it runs is the next call's to see (docs/performance.md, "The D-Bus
/// layer's cost per call").
public enum FileChecks {
    /// The watches whose queue the call on this thread has read already. A handful at most (the
    /// engine has one watch; a test may make a few): past `capacity` a check simply reads again.
    struct Drained {
        static let capacity = 4
        var ids: (ObjectIdentifier?, ObjectIdentifier?, ObjectIdentifier?, ObjectIdentifier?) = (nil, nil, nil, nil)

        /// True the first time; notes `id` as read from then on.
        mutating func first(_ id: ObjectIdentifier) -> Bool {
            switch id {
            case ids.0, ids.1, ids.2, ids.3: return false
            default: break
            }
            if ids.0 == nil { ids.0 = id } else if ids.1 == nil { ids.1 = id } else if ids.2 == nil { ids.2 = id } else if ids.3 == nil { ids.3 = id }
            return true
        }
    }

    /// The running call's `Drained`, on its own thread's stack: a thread-specific pointer, not a
    /// task-local value holding a locked object, which cost every call two allocations, a lock
    /// and the task-local push and pop (docs/performance.md, "What every method call paid").
    /// Only this thread ever sees it; a call that finishes on another thread reads again there.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// True when the check through `watch` must read its queue: outside `oncePerCall` always,
    /// inside only the first time in the call.
    static func firstCheck(of watch: PathChangeWatch) -> Bool {
        guard let state = pthread_getspecific(key) else { return true }
        return state.assumingMemoryBound(to: Drained.self).pointee.first(ObjectIdentifier(watch))
    }

    /// Runs `body` (one D-Bus call's handling, on its thread) reading each watch's queue at most once.
    public static func oncePerCall<R>(_ body: () -> R) -> R {
        var drained = Drained()
        return withUnsafeMutablePointer(to: &drained) { pointer in
            let previous = pthread_getspecific(key)
            pthread_setspecific(key, pointer)
            defer { pthread_setspecific(key, previous) }
            return body()
        }
    }
}

// MARK: Watches (under the lock)

extension PathChangeWatch.WatchTable {
    mutating func watchPath(to folder: String, edits: Bool) -> Bool {
        guard folder.hasPrefix("/") else { return false }
        var components = folder.split(separator: "/").map(String.init)
        // The file's own folder reports all its entries; each folder above it the one entry that
        // leads on. A folder that does not exist yet is left to its parent, which reports its
        // creation.
        var entryOnTheWay: String?
        while true {
            let current = "/" + components.joined(separator: "/")
            let mask = entryOnTheWay == nil ? PathChangeWatch.folderEvents | (edits ? UInt32(IN_MODIFY) : 0) : PathChangeWatch.pathEvents
            let result = add(current, mask: mask, entry: entryOnTheWay)
            if result == .failed { return false }
            guard let last = components.popLast() else { return result == .watched }
            entryOnTheWay = last
        }
    }

    private enum AddResult { case watched, missing, failed }

    private mutating func add(_ folder: String, mask: UInt32, entry: String?) -> AddResult {
        if let existing = descriptorsByPath[ExactText(folder)], var watch = watches[existing] {
            if watch.covers(mask: mask, entry: entry) { return .watched }
            // Widening an existing watch keeps its descriptor.
            guard (try? descriptor.addWatch(folder, mask: mask | UInt32(IN_MASK_ADD | IN_ONLYDIR))) == existing else {
                return .failed
            }
            watch.widen(mask: mask, entry: entry)
            watches[existing] = watch
            return .watched
        }
        let watchDescriptor: Int32
        do { watchDescriptor = try descriptor.addWatch(folder, mask: mask | UInt32(IN_MASK_ADD | IN_ONLYDIR)) } catch {
            return error == .noEntry || error == .notDirectory ? .missing : .failed
        }
        // The same folder may be reached by another name (a symlink on the way): one watch serves both.
        var watch = watches[watchDescriptor] ?? PathChangeWatch.Watch(entries: [], mask: 0)
        watch.widen(mask: mask, entry: entry)
        watches[watchDescriptor] = watch
        descriptorsByPath[ExactText(folder)] = watchDescriptor
        return .watched
    }

    /// Reads every queued event (the descriptor does not block) and moves `generation` on for
    /// those that matter.
    mutating func drainEvents() {
        let headerSize = 16  // int wd; uint32_t mask, cookie, len; then `len` bytes of name
        guard let buffer = events.baseAddress else { return }
        while true {
            // `.wouldBlock`: the queue is empty.
            guard let count = try? descriptor.read(into: events), count > 0 else { return }
            var offset = 0
            while offset + headerSize <= count {
                let watchDescriptor = buffer.load(fromByteOffset: offset, as: Int32.self)
                let mask = buffer.load(fromByteOffset: offset + 4, as: UInt32.self)
                let nameLength = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
                let name = nameLength > 0
                    ? String(cString: buffer.advanced(by: offset + headerSize).assumingMemoryBound(to: CChar.self)) : ""
                handle(watchDescriptor, mask, name)
                offset += headerSize + nameLength
            }
        }
    }

    private mutating func handle(_ watchDescriptor: Int32, _ mask: UInt32, _ name: String) {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 { return forgetAllWatches() }
        // Events of a watch already dropped (IN_IGNORED follows every removal) mean nothing now.
        guard let watch = watches[watchDescriptor] else { return }
        if mask & PathChangeWatch.watchGone != 0 { return forgetAllWatches() }
        guard let entries = watch.entries else {
            generation &+= 1
            return
        }
        if entries.contains(name) { forgetAllWatches() }
    }

    private mutating func forgetAllWatches() {
        for watchDescriptor in watches.keys { descriptor.removeWatch(watchDescriptor) }
        watches.removeAll()
        descriptorsByPath.removeAll()
        generation &+= 1
        resets += 1
    }
}

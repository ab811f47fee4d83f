import Foundation
import Testing

@testable import KeywellCore

/// The watch lets the engine skip re-checking files: each test changes something that a
/// per-call check would have noticed and expects the watch to report it.
@Suite struct PathChangeWatchTests {
    private let root: String
    private let folder: String
    private let file: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID().uuidString)").path
        folder = root + "/a/b"
        file = folder + "/login.keychain-db"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
    }

    private func remove() { try? FileManager.default.removeItem(atPath: root) }

    /// Takes a mark, checks that nothing is reported yet, makes `change`, expects it reported.
    private func expectReported(edits: Bool = false, _ what: Comment, _ change: () throws -> Void) throws {
        let watch = PathChangeWatch()
        let mark = try #require(watch.mark(watching: file, edits: edits))
        #expect(watch.isUnchanged(since: mark), "nothing changed yet")
        try change()
        #expect(!watch.isUnchanged(since: mark), what)
        // Watching again gives a mark that holds until the next change.
        let next = try #require(watch.mark(watching: file, edits: edits))
        #expect(watch.isUnchanged(since: next), what)
    }

    @Test func changesToTheFileAreReported() throws {
        defer { remove() }
        try expectReported("chmod") { chmod(file, 0o666) }
        try expectReported("replaced by rename") {
            #expect(FileManager.default.createFile(atPath: file + ".new", contents: Data("y".utf8)))
            #expect(rename(file + ".new", file) == 0)
        }
        try expectReported("deleted") { try FileManager.default.removeItem(atPath: file) }
        try expectReported("created") { #expect(FileManager.default.createFile(atPath: file, contents: Data())) }
        try expectReported("folder re-moded") { chmod(folder, 0o777) }
    }

    @Test func editsInPlaceCountOnlyWhenAskedFor() throws {
        defer { remove() }
        let handle = try #require(FileHandle(forWritingAtPath: file))
        defer { try? handle.close() }
        let watch = PathChangeWatch()
        let keychainMark = try #require(watch.mark(watching: file, edits: false))
        try handle.write(contentsOf: Data("more".utf8))
        // SQLite writes its open files all the time; those are not a replaced file.
        #expect(watch.isUnchanged(since: keychainMark))
        let settingsMark = try #require(watch.mark(watching: file, edits: true))
        try handle.write(contentsOf: Data("more".utf8))
        #expect(!watch.isUnchanged(since: settingsMark))
    }

    @Test func aFolderOnTheWayRenamedOrSwappedIsReported() throws {
        defer { remove() }
        try expectReported("parent renamed") {
            #expect(rename(root + "/a", root + "/old") == 0)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        try expectReported("parent swapped for a symlink") {
            #expect(rename(root + "/a", root + "/older") == 0)
            #expect(symlink(root + "/old", root + "/a") == 0)
        }
        // Changes elsewhere on the way do not matter.
        let watch = PathChangeWatch()
        let mark = try #require(watch.mark(watching: file, edits: false))
        #expect(FileManager.default.createFile(atPath: root + "/unrelated", contents: Data()))
        try FileManager.default.createDirectory(atPath: root + "/other", withIntermediateDirectories: true)
        #expect(watch.isUnchanged(since: mark))
    }

    @Test func aFolderThatDoesNotExistYetIsReportedWhenMade() throws {
        defer { remove() }
        let missing = root + "/a/c/new.keychain-db"
        let watch = PathChangeWatch()
        let mark = try #require(watch.mark(watching: missing, edits: false))
        #expect(watch.isUnchanged(since: mark))
        try FileManager.default.createDirectory(atPath: root + "/a/c", withIntermediateDirectories: true)
        #expect(!watch.isUnchanged(since: mark))
    }

    @Test func aMarkTakenWhileTheWayIsStillChangingStillWatches() throws {
        defer { remove() }
        let watch = PathChangeWatch()
        let missing = root + "/a/c/settings.json"
        _ = watch.mark(watching: missing, edits: true)
        // The folder's creation is still queued when the next mark is taken.
        try FileManager.default.createDirectory(atPath: root + "/a/c", withIntermediateDirectories: true)
        let mark = try #require(watch.mark(watching: missing, edits: true))
        #expect(watch.isUnchanged(since: mark))
        #expect(FileManager.default.createFile(atPath: missing, contents: Data("{}".utf8)))
        #expect(!watch.isUnchanged(since: mark))
    }

    @Test func aFolderMarkReportsAnyEntry() throws {
        defer { remove() }
        let watch = PathChangeWatch()
        let mark = try #require(watch.mark(watchingFolder: folder, edits: false))
        #expect(watch.isUnchanged(since: mark))
        #expect(FileManager.default.createFile(atPath: folder + "/work.keychain-db", contents: Data()))
        #expect(!watch.isUnchanged(since: mark))
    }

    @Test func oneCallReadsTheQueueOnceAndTheNextCallSeesWhatChanged() throws {
        defer { remove() }
        let watch = PathChangeWatch()
        let mark = try #require(watch.mark(watching: file, edits: false))
        // A change made before the call is seen by its first check.
        chmod(file, 0o666)
        FileChecks.oncePerCall {
            #expect(!watch.isUnchanged(since: mark), "a change made before the call")
        }
        let next = try #require(watch.mark(watching: file, edits: false))
        FileChecks.oncePerCall {
            #expect(watch.isUnchanged(since: next))
            // Made while the call runs: its later checks do not read the queue again.
            chmod(file, 0o600)
            #expect(watch.isUnchanged(since: next), "the queue is read once per call")
        }
        FileChecks.oncePerCall {
            #expect(!watch.isUnchanged(since: next), "the next call sees it")
        }
        // Outside a call every check reads the queue, as before.
        let outside = try #require(watch.mark(watching: file, edits: false))
        chmod(file, 0o666)
        #expect(!watch.isUnchanged(since: outside))
    }

    @Test func noMarkMeansCheckEveryTime() {
        let watch = PathChangeWatch()
        #expect(!watch.isUnchanged(since: nil))
        #expect(watch.mark(watching: "relative/path", edits: false) == nil)
    }
}

import KeywellTestSupport
import Testing

@testable import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// The typed descriptor: typed errors, whole writes, and who closes it.
@Suite struct FileDescriptorTests {
    /// Whether `file` still names `path`. Tests run in parallel, so a closed number may already be
    /// another test's descriptor: what it points at tells, its mere validity does not.
    private func names(_ file: FileDescriptor, _ path: String) -> Bool {
        var target = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/fd/\(file.rawValue)", &target, target.count - 1)
        return count > 0 && String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) == path
    }

    @Test func writesAllAndReadsBack() throws {
        let folder = try TemporaryDirectory(prefix: "keywell-fd")
        let path = folder.subpath("file")
        let file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL, permissions: 0o600)
        try file.closeAfter { () throws in
            #expect(names(file, path))
            try file.writeAll(Array("hello, descriptor".utf8))
            try file.writeAll(toAbsoluteOffset: 0, "J".utf8)
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = try buffer.withUnsafeMutableBytes { buffer in try file.read(fromAbsoluteOffset: 0, into: buffer) }
            #expect(String(decoding: buffer[..<count], as: UTF8.self) == "Jello, descriptor")
            try file.resize(to: 4)
        }
        #expect(!names(file, path), "closeAfter closed it")
        let again = try FileDescriptor.open(path, O_RDONLY)
        #expect(fcntl(again.rawValue, F_GETFD) & FD_CLOEXEC != 0, "open adds O_CLOEXEC")
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = try buffer.withUnsafeMutableBytes { buffer in try again.read(into: buffer) }
        #expect(String(decoding: buffer[..<count], as: UTF8.self) == "Jell")
        #expect(names(again, path))
        try again.close()
        #expect(!names(again, path))
    }

    @Test func openFailureIsTheTypedErrno() throws {
        let folder = try TemporaryDirectory(prefix: "keywell-fd")
        #expect(throws: Errno.noEntry) { try FileDescriptor.open(folder.subpath("missing"), O_RDONLY) }
        let path = folder.subpath("file")
        try FileDescriptor.open(path, O_WRONLY | O_CREAT, permissions: 0o600).close()
        #expect(throws: Errno.exists) { try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, permissions: 0o600) }
    }

    @Test func closeAfterClosesWhenTheBodyThrows() throws {
        let folder = try TemporaryDirectory(prefix: "keywell-fd")
        let path = folder.subpath("file")
        let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT, permissions: 0o600)
        #expect(names(file, path))
        #expect(throws: Errno.notPermitted) { try file.closeAfter { () throws(Errno) in throw Errno.notPermitted } }
        #expect(!names(file, path), "the descriptor was closed on the throwing path")
    }

    @Test func readAllKeepsToItsCap() throws {
        let folder = try TemporaryDirectory(prefix: "keywell-fd")
        let path = folder.subpath("file")
        let contents = (0..<200_000).map { UInt8(truncatingIfNeeded: $0) }
        let file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL, permissions: 0o600)
        try file.closeAfter { () throws in
            try file.writeAll(contents)
            #expect(try file.readAll(limit: 1 << 20, fromAbsoluteOffset: 0) == contents)
            #expect(try file.readAll(limit: contents.count, fromAbsoluteOffset: 0) == contents, "exactly the cap is allowed")
            #expect(try file.readAll(limit: contents.count - 1, fromAbsoluteOffset: 0) == nil, "one byte over is refused")
            #expect(try file.readAll(limit: 0, fromAbsoluteOffset: 0) == nil)
            // From the current offset, which the writes left at the end.
            #expect(try file.readAll(limit: 10) == [])
        }
    }

    @Test func readAllOfAPipeGrowsPastItsFirstBuffer() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        #expect(fcntl(readEnd.rawValue, F_GETFD) & FD_CLOEXEC != 0 && fcntl(writeEnd.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        // More than the first 64 KiB buffer and than the pipe holds: written by another thread.
        let contents = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        startDetachedThread(name: "test-writer", stackSize: 256 << 10) {
            writeEnd.closeAfter { try? writeEnd.writeAll(contents) }
        }
        try readEnd.closeAfter { () throws in
            #expect(try readEnd.readAll(limit: 1 << 20) == contents)
        }
        // Over the cap, on a socket: the read stops one byte past it, and the writer meets a
        // closed peer (EPIPE, never SIGPIPE: sendAll passes MSG_NOSIGNAL).
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let (small, writer) = (FileDescriptor(rawValue: pair[0]), FileDescriptor(rawValue: pair[1]))
        startDetachedThread(name: "test-writer", stackSize: 256 << 10) {
            writer.closeAfter { try? writer.sendAll(contents) }
        }
        try small.closeAfter { () throws in #expect(try small.readAll(limit: 100_000) == nil) }
    }

    @Test func aFullNonBlockingPipeSaysWouldBlockAndWaits() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { try? writeEnd.close() }
        try writeEnd.setNonBlocking()
        let chunk = [UInt8](repeating: 1, count: 1 << 16)
        var written = 0
        while true {
            let result = chunk.withUnsafeBytes { buffer in Result { () throws(Errno) in try writeEnd.write(buffer) } }
            guard case .success(let count) = result else {
                #expect(throws: Errno.wouldBlock) { try result.get() }
                break
            }
            written += count
        }
        #expect(written > 0)
        #expect(try writeEnd.wait(for: POLLOUT, milliseconds: 10) == 0, "no room: the wait times out")
        #expect(try readEnd.wait(for: POLLIN, milliseconds: 10) & Int32(POLLIN) != 0)
        try readEnd.close()
        #expect(try writeEnd.wait(for: POLLOUT, milliseconds: 10) & Int32(POLLERR) != 0, "the reading end is gone")
    }

    /// The watchers' inotify: an empty queue is `.wouldBlock` (the descriptor never blocks), a
    /// file made in a watched folder is an event, and a missing folder is the typed ENOENT.
    @Test func inotifySeesAFileMadeInAWatchedFolder() throws {
        let folder = try TemporaryDirectory(prefix: "keywell-inotify")
        let inotify = try FileDescriptor.inotify()
        defer { try? inotify.close() }
        #expect(fcntl(inotify.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        #expect(throws: Errno.noEntry) { _ = try inotify.addWatch(folder.subpath("missing"), mask: UInt32(IN_CREATE)) }
        let watch = try inotify.addWatch(folder.path, mask: UInt32(IN_CREATE))
        var events = [UInt8](repeating: 0, count: 4096)
        #expect(throws: Errno.wouldBlock) { _ = try events.withUnsafeMutableBytes { buffer in try inotify.read(into: buffer) } }
        let made = try FileDescriptor.open(folder.subpath("made"), O_WRONLY | O_CREAT | O_EXCL, permissions: 0o600)
        try made.close()
        #expect(try inotify.wait(for: POLLIN, milliseconds: 5000) & POLLIN != 0)
        let count = try events.withUnsafeMutableBytes { buffer in try inotify.read(into: buffer) }
        #expect(count >= 16)
        #expect(events.withUnsafeBytes { $0.load(as: Int32.self) } == watch)
        #expect(events.withUnsafeBytes { $0.load(fromByteOffset: 4, as: UInt32.self) } & UInt32(IN_CREATE) != 0)
        inotify.removeWatch(watch)
    }

    /// Several descriptors in one wait: only the pipe with bytes in it is readable.
    @Test func aWaitOnSeveralDescriptorsNamesTheReadyOne() throws {
        let quiet = try FileDescriptor.pipe()
        let busy = try FileDescriptor.pipe()
        defer { for end in [quiet.readEnd, quiet.writeEnd, busy.readEnd, busy.writeEnd] { try? end.close() } }
        var entries = [quiet.readEnd, busy.readEnd].map { pollfd(fd: $0.rawValue, events: Int16(POLLIN), revents: 0) }
        #expect(try FileDescriptor.wait(&entries, milliseconds: 0) == 0)
        try busy.writeEnd.writeAll([1])
        #expect(try FileDescriptor.wait(&entries, milliseconds: 5000) == 1)
        #expect(entries[0].revents == 0)
        #expect(Int32(entries[1].revents) & POLLIN != 0)
    }
}

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
}

import Foundation
import KeywellSystem
import Testing

@testable import KeywellIdentity

/// Whether a process holds a socket as its own: the byte parsers of `/proc/<pid>/fd` links and
/// fdinfo, and the whole check against this test process's own descriptors.
@Suite("Holding a connection")
struct ConnectionHoldingTests {
    private func inode(_ text: String) -> UInt32? {
        Array(text.utf8).withUnsafeBytes { ConnectionHolding.socketInode(link: $0) }
    }

    private func closeOnExec(_ text: String) -> Bool? {
        Array(text.utf8).withUnsafeBytes { ConnectionHolding.closeOnExec(fdinfo: $0) }
    }

    @Test func socketLinksGiveTheirInodeAndNothingElseDoes() {
        #expect(inode("socket:[12345]") == 12345)
        #expect(inode("socket:[4294967295]") == UInt32.max)
        for other in ["socket:[4294967296]", "socket:[]", "socket:[12a]", "socket:12]", "socket:[12", "pipe:[12]",
                      "/dev/null", "anon_inode:[eventfd]", "", "socket:[-1]"] {
            #expect(inode(other) == nil, "\(other)")
        }
    }

    @Test func fdinfoFlagsAreReadInOctal() {
        #expect(closeOnExec("pos:\t0\nflags:\t02000002\nmnt_id:\t8\n") == true)
        #expect(closeOnExec("pos:\t0\nflags:\t00000002\nmnt_id:\t8\n") == false)
        #expect(closeOnExec("flags:  02004002") == true)
        #expect(closeOnExec("pos:\t0\nmnt_id:\t8\n") == nil)
        #expect(closeOnExec("flags:\t0200x002\n") == nil)
        #expect(closeOnExec("flags:\t08\n") == nil)
        #expect(closeOnExec("flags:\t\n") == nil)
        #expect(closeOnExec("flags:\t" + String(repeating: "7", count: 40) + "\n") == nil)
        // A `flags:` inside another line's value is not the flags line.
        #expect(closeOnExec("name:\tflags: 02000000\nflags:\t0\n") == false)
    }

    @Test func aSocketHeldMarkedCountsAndOneHeldUnmarkedDoesNot() throws {
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        var status = stat()
        try #require(fstat(pair[1], &status) == 0)
        let held = UInt32(truncatingIfNeeded: status.st_ino)
        let pin = try ProcessPin(pid: getpid(), pidfd: nil)
        #expect(try ConnectionHolding.holds(pin, where: { $0 == held }))
        // Not marked close-on-exec (as after crossing an exec): not this program's own.
        try #require(fcntl(pair[1], F_SETFD, 0) == 0)
        #expect(try !ConnectionHolding.holds(pin, where: { $0 == held }))
        #expect(try !ConnectionHolding.holds(pin, where: { _ in false }))
    }
}

import CProcessPinning
import Foundation
import KeywellSystem

/// Whether the process a connection is credited to holds that connection as its own
/// (docs/access-control.md, "A connection handed over an exec"). The kernel and the bus name the
/// process that *connected*; a process may fork, leave the socket to its child and exec a trusted
/// program, whose name the child would then borrow. Such a socket crossed an exec, and an exec
/// always closes the descriptors marked close-on-exec: so a process holding the socket through a
/// descriptor marked close-on-exec took it (connected, received or marked it) in the program it
/// runs now. Every D-Bus library marks its sockets so; a connection held otherwise is trusted with
/// nothing.
enum ConnectionHolding {
    /// Descriptors looked at in one process; a process holding more is judged on the first ones.
    static let maximumDescriptors = 65_536

    /// Whether `pin`'s process holds, with close-on-exec, a socket whose inode satisfies `wanted`.
    static func holds(_ pin: ProcessPin, where wanted: (UInt32) -> Bool) throws(IdentityError) -> Bool {
        let folder = try pin.open("fd", flags: O_RDONLY | O_DIRECTORY)
        guard let listing = fdopendir(folder.rawValue) else {
            try? folder.close()
            throw .process("/proc/\(pin.pid)/fd: \(ProcessPin.errorText())")
        }
        defer { closedir(listing) }
        var seen = 0
        while seen < maximumDescriptors, let entry = readdir(listing) {
            seen += 1
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let inode = socketInode(linkAt: name, in: dirfd(listing)), wanted(inode),
                  try pin.isCloseOnExec(descriptor: name) else { continue }
            return true
        }
        return false
    }

    /// The inode of the socket at the other end of `socket`, one of this process's own.
    static func peerInode(ofOwn socket: FileDescriptor) -> UInt32? {
        var status = stat()
        guard fstat(socket.rawValue, &status) == 0 else { return nil }
        return info(UInt32(truncatingIfNeeded: status.st_ino))?.peer
    }

    /// The address of the listener that accepted `socket`, a client socket of this process: the
    /// bus's address, for keywelld's own connection to the bus.
    static func listenerAddress(ofOwn socket: FileDescriptor) -> [UInt8]? {
        guard let peer = peerInode(ofOwn: socket), peer != 0, let address = info(peer)?.name, !address.isEmpty else { return nil }
        return address
    }

    /// Whether the socket with `inode` is connected to a socket that `address`'s listener accepted.
    static func isConnected(_ inode: UInt32, toListener address: [UInt8]) -> Bool {
        guard let peer = info(inode)?.peer, peer != 0 else { return false }
        return info(peer)?.name == address
    }

    private static func info(_ inode: UInt32) -> (peer: UInt32, name: [UInt8])? {
        var peer: UInt32 = 0
        var name = [UInt8](repeating: 0, count: 128)
        var length = 0
        let status = name.withUnsafeMutableBytes {
            keywell_unix_socket_info(inode, &peer, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count, &length)
        }
        guard status == 0 else { return nil }
        return (peer, Array(name[..<length]))
    }

    /// `socket:[<inode>]`, what the kernel shows for a descriptor of a socket.
    private static func socketInode(linkAt name: String, in folder: Int32) -> UInt32? {
        guard name.first?.isNumber == true else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlinkat(folder, name, &buffer, buffer.count - 1)
        guard length > 9 else { return nil }
        let target = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard target.hasPrefix("socket:["), target.hasSuffix("]") else { return nil }
        return UInt32(target.dropFirst(8).dropLast())
    }
}

extension ProcessPin {
    /// Whether the process's descriptor `descriptor` (its number, as `/proc/<pid>/fd` names it) is
    /// marked close-on-exec: the `flags` line of its fdinfo, in octal.
    func isCloseOnExec(descriptor: String) throws(IdentityError) -> Bool {
        let (bytes, _) = try read("fdinfo/\(descriptor)", limit: 4096)
        for line in bytes.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("flags:".utf8)) {
            let digits = String(decoding: line.dropFirst(6), as: UTF8.self).trimmingCharacters(in: .whitespaces)
            guard let flags = Int(digits, radix: 8) else { return false }
            return flags & Int(O_CLOEXEC) != 0
        }
        return false
    }
}

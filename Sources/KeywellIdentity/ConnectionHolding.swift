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
            // The name is read in place; only the one descriptor that matches is named as text.
            let matched = withUnsafeBytes(of: entry.pointee.d_name) { name -> Bool in
                guard let first = name.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9"),
                      let inode = socketInode(linkAt: name.baseAddress!.assumingMemoryBound(to: CChar.self), in: dirfd(listing)) else {
                    return false
                }
                return wanted(inode)
            }
            guard matched else { continue }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if try pin.isCloseOnExec(descriptor: name) { return true }
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

    /// `socket:[<inode>]`, what the kernel shows for a descriptor of a socket; nil for anything
    /// else. Parsed from the link's bytes on the stack: every descriptor of the process passes
    /// here, at each new caller (docs/performance.md, "A new caller's cost in keywelld").
    static func socketInode(linkAt name: UnsafePointer<CChar>, in folder: Int32) -> UInt32? {
        // "socket:[4294967295]" is 19 bytes; a longer link is not a socket's.
        var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &buffer) { raw -> UInt32? in
            let length = readlinkat(folder, name, raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count)
            guard length > 0, length < raw.count else { return nil }
            return socketInode(link: UnsafeRawBufferPointer(rebasing: raw[..<length]))
        }
    }

    /// The inode in a link's text `socket:[<decimal>]`, or nil.
    static func socketInode(link: UnsafeRawBufferPointer) -> UInt32? {
        let prefix: StaticString = "socket:["
        let prefixLength = prefix.utf8CodeUnitCount
        guard link.count > prefixLength + 1, link[link.count - 1] == UInt8(ascii: "]"),
              memcmp(link.baseAddress!, prefix.utf8Start, prefixLength) == 0 else { return nil }
        var value: UInt64 = 0
        for byte in link[prefixLength..<(link.count - 1)] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
            guard value <= UInt64(UInt32.max) else { return nil }
        }
        return UInt32(value)
    }
}

extension ProcessPin {
    /// Whether the process's descriptor `descriptor` (its number, as `/proc/<pid>/fd` names it) is
    /// marked close-on-exec: the `flags` line of its fdinfo, in octal.
    func isCloseOnExec(descriptor: String) throws(IdentityError) -> Bool {
        let (bytes, _) = try read("fdinfo/\(descriptor)", limit: 4096)
        return bytes.withUnsafeBytes { ConnectionHolding.closeOnExec(fdinfo: $0) } ?? false
    }
}

extension ConnectionHolding {
    /// Whether an fdinfo's `flags:` line (octal, after spaces or tabs) has O_CLOEXEC; nil when
    /// the line is missing or not octal.
    static func closeOnExec(fdinfo: UnsafeRawBufferPointer) -> Bool? {
        let key = Array("flags:".utf8)
        var lineStart = 0
        while lineStart < fdinfo.count {
            let lineEnd = fdinfo[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? fdinfo.count
            let line = fdinfo[lineStart..<lineEnd]
            if line.starts(with: key) {
                var flags = 0
                var digits = 0
                for byte in line.dropFirst(key.count) {
                    if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                        guard digits == 0 else { break }
                        continue
                    }
                    guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "7"), digits < 21 else { return nil }
                    flags = flags << 3 | Int(byte - UInt8(ascii: "0"))
                    digits += 1
                }
                guard digits > 0 else { return nil }
                return flags & Int(O_CLOEXEC) != 0
            }
            lineStart = lineEnd + 1
        }
        return nil
    }
}

import KeywellTestSupport
import Testing

@testable import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// Which programs only root can replace (docs/access-control.md, "Programs only root can
/// replace"), on trees made for the test: one under a fresh `/opt` folder, whose folders are
/// root's alone (the tests run as root), and one under `/tmp`, which anyone may write.
@Suite(.serialized, .enabled(if: ContinuousIntegration.runs(if: getuid() == 0), "making root-owned trees needs root"))
struct RootOnlyProgramTests {
    init() throws {
        try #require(getuid() == 0, "making root-owned trees needs root: CI runs as root")
    }

    /// Files and folders made for one test, removed in reverse order when it ends.
    final class Tree {
        let root: String
        private var made: [String] = []

        init(under parent: String) throws {
            var template = Array("\(parent)/keywell-test-XXXXXX".utf8CString)
            guard let folder = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { throw TreeError.failed("mkdtemp") }
            root = String(cString: folder)
            made.append(root)
            try check(chmod(root, 0o755), "chmod \(root)")
        }

        deinit {
            for path in made.reversed() {
                var status = stat()
                guard lstat(path, &status) == 0 else { continue }
                _ = status.st_mode & S_IFMT == S_IFDIR ? rmdir(path) : unlink(path)
            }
        }

        @discardableResult
        func folder(_ relative: String, mode: mode_t = 0o755) throws -> String {
            let path = "\(root)/\(relative)"
            try check(mkdir(path, mode), "mkdir \(path)")
            try check(chmod(path, mode), "chmod \(path)")
            made.append(path)
            return path
        }

        @discardableResult
        func file(_ relative: String, contents: String = "#!/bin/true\n", mode: mode_t = 0o755) throws -> String {
            let path = "\(root)/\(relative)"
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
            try check(descriptor, "create \(path)")
            defer { close(descriptor) }
            _ = contents.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
            try check(fchmod(descriptor, mode), "chmod \(path)")
            made.append(path)
            return path
        }

        func link(_ relative: String, to target: String) throws {
            let path = "\(root)/\(relative)"
            try check(symlink(target, path), "symlink \(path)")
            made.append(path)
        }

        private func check(_ result: Int32, _ what: String) throws {
            guard result >= 0 else { throw TreeError.failed("\(what): \(String(cString: strerror(errno)))") }
        }
    }

    enum TreeError: Error { case failed(String) }

    private func verdict(_ path: String) throws -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw TreeError.failed("open \(path)") }
        defer { close(descriptor) }
        return RootOnlyProgram.isRootOnly(FileDescriptor(rawValue: descriptor), path: path)
    }

    @Test func aRootOwnedProgramInRootOwnedFoldersIsRootOnly() throws {
        let tree = try Tree(under: "/opt")
        try tree.folder("bin")
        #expect(try verdict(try tree.file("bin/tool")))
        // A file root alone may read and write is root-only too: no write bit for others is what counts.
        #expect(try verdict(try tree.file("bin/private", mode: 0o700)))
        #expect(try verdict("/usr/bin/env"))
    }

    @Test func aProgramBelowTmpIsNeverRootOnly() throws {
        let tree = try Tree(under: "/tmp")
        try tree.folder("bin")
        #expect(!(try verdict(try tree.file("bin/tool"))))
    }

    @Test func aFolderOthersCanWriteMakesItNotRootOnly() throws {
        for mode: mode_t in [0o775, 0o757, 0o1777] {
            let tree = try Tree(under: "/opt")
            try tree.folder("shared", mode: mode)
            try tree.folder("shared/bin")
            #expect(!(try verdict(try tree.file("shared/bin/tool"))), "a folder of mode \(String(mode, radix: 8)) on the way")
        }
    }

    @Test func aFolderOfAnotherOwnerMakesItNotRootOnly() throws {
        let tree = try Tree(under: "/opt")
        let folder = try tree.folder("bin")
        #expect(chown(folder, 65534, 65534) == 0)
        #expect(!(try verdict(try tree.file("bin/tool"))))
    }

    @Test func aFileOthersCanWriteOrOwnIsNotRootOnly() throws {
        let tree = try Tree(under: "/opt")
        try tree.folder("bin")
        #expect(!(try verdict(try tree.file("bin/group-writable", mode: 0o775))))
        #expect(!(try verdict(try tree.file("bin/world-writable", mode: 0o757))))
        let owned = try tree.file("bin/owned")
        #expect(chown(owned, 65534, 65534) == 0)
        #expect(!(try verdict(owned)))
    }

    @Test func aPathNowNamingAnotherFileIsNotRootOnly() throws {
        let tree = try Tree(under: "/opt")
        try tree.folder("bin")
        let tool = try tree.file("bin/tool")
        let running = open(tool, O_RDONLY | O_CLOEXEC)
        #expect(running >= 0)
        defer { close(running) }
        #expect(RootOnlyProgram.isRootOnly(FileDescriptor(rawValue: running), path: tool))
        // Replaced as a package manager replaces it: the open file is no longer what the path names.
        let update = try tree.file("bin/.tool.new", contents: "#!/bin/false\n")
        #expect(rename(update, tool) == 0)
        #expect(!RootOnlyProgram.isRootOnly(FileDescriptor(rawValue: running), path: tool))
        #expect(try verdict(tool))
    }

    @Test func aSymbolicLinkOnTheWayIsNotRootOnly() throws {
        let tree = try Tree(under: "/opt")
        let bin = try tree.folder("bin")
        let tool = try tree.file("bin/tool")
        try tree.link("via", to: bin)
        try tree.link("bin/alias", to: tool)
        let descriptor = open(tool, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        #expect(!RootOnlyProgram.isRootOnly(FileDescriptor(rawValue: descriptor), path: "\(tree.root)/via/tool"))
        #expect(!RootOnlyProgram.isRootOnly(FileDescriptor(rawValue: descriptor), path: "\(tree.root)/bin/alias"))
    }

    @Test func aFolderIsNeverAProgram() throws {
        let descriptor = open("/usr/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(descriptor) }
        #expect(!RootOnlyProgram.isRootOnly(FileDescriptor(rawValue: descriptor), path: "/usr/bin"))
    }

    @Test func onlyPlainAbsolutePathsNameTheirFolders() {
        #expect(RootOnlyProgram.folders(above: "/usr/bin/env") == ["/", "/usr", "/usr/bin"])
        #expect(RootOnlyProgram.folders(above: "/env") == ["/"])
        for path in ["usr/bin/env", "/", "/usr//env", "/usr/bin/", "/usr/./env", "/usr/../tmp/env", ""] {
            #expect(RootOnlyProgram.folders(above: path) == nil, "\(path)")
        }
    }
}

import DeterministicRandom
import Foundation
import KeywellIdentity
import KeywellSystem
import KeywellTestSupport
import Testing

/// SHA-256 of files, remembered until the file changes.
@Suite("File digests")
struct FileDigestTests {
    private func digest(_ digests: FileDigest, _ path: String) throws -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        return try digests.sha256(of: FileDescriptor(rawValue: descriptor))
    }

    @Test func knownVectorsAndChangesAreSeen() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let digests = FileDigest()
        let path = try folder.write("abc", to: "f")
        #expect(try digest(digests, path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(try digest(digests, path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(digests.filesHashed == 1)
        // Same size, same inode, new contents: mtime and ctime move, so it is hashed again.
        _ = try folder.write("abd", to: "f")
        #expect(try digest(digests, path) == "a52d159f262b2c6ddb724a61840befc36eb30c88877a4030b65cbe86298449c9")
        #expect(digests.filesHashed == 2)
        let empty = try folder.write("", to: "e")
        #expect(try digest(digests, empty) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func aLargeFileMatchesSha256sum() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        var generator = SplitMix64(seed: 7)
        let bytes = (0..<(600 * 1024 + 13)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let path = try folder.write(bytes, to: "big")
        let output = try ChildProcess.run("/usr/bin/sha256sum", arguments: [path])
        let expected = String(decoding: output.standardOutput, as: UTF8.self).split(separator: " ").first.map(String.init)
        #expect(try digest(FileDigest(), path) == expected)
    }

    @Test func onlyRegularFilesAreHashed() throws {
        let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        #expect(throws: IdentityError.self) { try FileDigest().sha256(of: FileDescriptor(rawValue: descriptor)) }
    }

    @Test func theCacheIsBounded() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let digests = FileDigest(capacity: 2)
        let paths = try (0..<3).map { try folder.write("file \($0)", to: "f\($0)") }
        for path in paths { _ = try digest(digests, path) }
        #expect(digests.filesHashed == 3)
        _ = try digest(digests, paths[2])
        #expect(digests.filesHashed == 3)
        _ = try digest(digests, paths[0])  // forgotten: the oldest went when the third came
        #expect(digests.filesHashed == 4)
    }
}

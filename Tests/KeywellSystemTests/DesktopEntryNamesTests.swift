import Foundation
import Testing

@testable import KeywellSystem

/// Names from desktop entries (docs/access-control.md, "The words"), on folders made for the test.
@Suite("Desktop entry names")
struct DesktopEntryNamesTests {
    /// A data home, a data folder, and a `bin` folder on `PATH` with programs in it.
    final class Desktop {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("keywell-names-\(UUID().uuidString)").path
        var home: String { root + "/home" }
        var system: String { root + "/system" }
        var bin: String { root + "/bin" }

        init() throws {
            for folder in [home + "/applications", system + "/applications", bin] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        @discardableResult
        func program(_ name: String) -> String {
            let path = bin + "/" + name
            FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
            return path
        }

        func entry(_ folder: String, _ name: String, _ keys: String) throws {
            try Data("# comment\n[Desktop Entry]\nType=Application\n\(keys)\n[Desktop Action new]\nName=Not this\n".utf8)
                .write(to: URL(fileURLWithPath: folder + "/applications/" + name))
        }

        func names(_ extra: [String: String] = [:]) -> DesktopEntryNames {
            DesktopEntryNames(environment: ["XDG_DATA_HOME": home, "XDG_DATA_DIRS": system, "PATH": bin].merging(extra) { $1 })
        }
    }

    @Test func execsFirstWordThroughPathAndSymlinks() throws {
        let desktop = try Desktop()
        let real = desktop.program("real-tool")
        try FileManager.default.createSymbolicLink(atPath: desktop.bin + "/tool", withDestinationPath: real)
        try desktop.entry(desktop.system, "tool.desktop", "Name=Tool\nExec=tool --new-window %U")
        #expect(desktop.names().name(ofProgram: real) == "Tool")
        #expect(desktop.names().name(ofProgram: desktop.bin + "/tool") == nil)
    }

    @Test func tryExecWinsOverExecAndQuotesAreRemoved() throws {
        let desktop = try Desktop()
        let launcher = desktop.program("launcher")
        let spaced = desktop.program("my tool")
        try desktop.entry(desktop.system, "a.desktop", "Name=Launched\nTryExec=\(launcher)\nExec=\(spaced)")
        try desktop.entry(desktop.system, "b.desktop", "Name=Spaced\nExec=\"\(desktop.bin)/my tool\" %f")
        let names = desktop.names()
        #expect(names.name(ofProgram: launcher) == "Launched")
        #expect(names.name(ofProgram: spaced) == "Spaced")
    }

    @Test func theDataHomeComesFirstAndHidesItsIDs() throws {
        let desktop = try Desktop()
        let tool = desktop.program("tool")
        let other = desktop.program("other")
        try desktop.entry(desktop.system, "tool.desktop", "Name=System Tool\nExec=tool")
        try desktop.entry(desktop.home, "mine.desktop", "Name=My Tool\nExec=tool")
        try desktop.entry(desktop.system, "other.desktop", "Name=Other\nExec=other")
        try desktop.entry(desktop.home, "other.desktop", "Name=Other\nHidden=true\nExec=other")
        #expect(desktop.names().name(ofProgram: tool) == "My Tool")
        #expect(desktop.names().name(ofProgram: other) == nil)
    }

    @Test func theNameIsInKeywelldsLocale() throws {
        let desktop = try Desktop()
        let tool = desktop.program("tool")
        try desktop.entry(desktop.system, "tool.desktop", "Name=Files\nName[de]=Dateien\nName[pt_BR]=Arquivos\nExec=tool")
        #expect(desktop.names(["LANG": "de_AT.UTF-8"]).name(ofProgram: tool) == "Dateien")
        #expect(desktop.names(["LANG": "de_DE", "LC_ALL": "pt_BR.UTF-8"]).name(ofProgram: tool) == "Arquivos")
        #expect(desktop.names(["LANG": "C.UTF-8"]).name(ofProgram: tool) == "Files")
    }

    @Test func aNewEntryIsSeenByTheNextLookupWithoutAnotherScanBefore() throws {
        let desktop = try Desktop()
        let tool = desktop.program("tool")
        let names = desktop.names()
        #expect(names.name(ofProgram: tool) == nil)
        // The folder's modification time must move: file systems with coarse times need a tick.
        Thread.sleep(forTimeInterval: 0.02)
        try desktop.entry(desktop.home, "tool.desktop", "Name=Tool\nExec=tool")
        #expect(names.name(ofProgram: tool) == "Tool")
        #expect(names.name(ofEntry: "tool") == "Tool")
    }

    @Test func otherTypesAndGroupsAreIgnored() {
        let locale = DesktopLocale(environment: [:])
        #expect(DesktopEntry(parsing: "[Desktop Entry]\nType=Link\nName=X\nURL=http://x\n", locale: locale) == nil)
        let entry = DesktopEntry(parsing: "[Other]\nName=Wrong\n[Desktop Entry]\nType=Application\nName=Right\\sOne\nExec=x\n", locale: locale)
        #expect(entry?.name == "Right One")
        #expect(entry?.program == "x")
    }
}

import Testing
@testable import KeywellSystem

/// One reading of GLib key-file values for desktop entries, `/.flatpak-info` and gnome-keyring's
/// text keyrings (docs/access-control.md, docs/migration.md).
struct KeyFileStringTests {
    @Test func knownEscapesBecomeTheirCharacters() {
        let value = KeyFileString(escaped: #"a\sb\nc\td\re\\f"#)
        #expect(value.isValid)
        #expect(value.text == "a b\nc\td\re\\f")
    }

    @Test func anUnknownEscapeIsKeptAsWrittenAndMarksTheValueInvalid() {
        let value = KeyFileString(escaped: #"org.example\qApp"#)
        #expect(!value.isValid)
        #expect(value.text == #"org.example\qApp"#)
        #expect(KeyFileString.valid(#"org.example\qApp"#) == nil)
    }

    @Test func aBackslashAtTheEndIsInvalid() {
        let value = KeyFileString(escaped: #"name\"#)
        #expect(!value.isValid)
        #expect(value.text == #"name\"#)
    }

    @Test func aValueWithoutEscapesIsUnchanged() {
        #expect(KeyFileString.valid("Files") == "Files")
    }

    @Test func aDesktopEntryWithAnInvalidNameHasNoName() throws {
        let entry = try #require(DesktopEntry(parsing: "[Desktop Entry]\nType=Application\nName=Bad\\qName\nExec=/usr/bin/tool\n", locale: DesktopLocale(environment: [:])))
        #expect(entry.name == nil)
        #expect(entry.program == "/usr/bin/tool")
    }
}

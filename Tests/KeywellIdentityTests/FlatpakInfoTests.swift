import KeywellIdentity
import Testing

/// `/.flatpak-info` is parsed strictly: anything Flatpak would not write is refused whole
/// (docs/access-control.md "Flatpak").
@Suite("Flatpak info files")
struct FlatpakInfoTests {
    private func parse(_ text: String) throws(FlatpakInfo.ParseError) -> FlatpakInfo {
        try FlatpakInfo(parsing: Array(text.utf8))
    }

    private let real = """
        [Application]
        name=org.example.App
        runtime=runtime/org.freedesktop.Platform/x86_64/23.08

        [Instance]
        instance-id=1984473542
        instance-path=/home/u/.var/app/org.example.App
        app-path=/var/lib/flatpak/app/org.example.App/x86_64/stable/abc/files
        branch=stable
        flatpak-version=1.14.4
        session-bus-proxy=true

        [Context]
        shared=network;ipc;
        sockets=x11;wayland;pulseaudio;
        """

    @Test func aFileAsFlatpakWritesItNamesTheApp() throws {
        #expect(try parse(real) == FlatpakInfo(appID: "org.example.App", instanceID: "1984473542"))
        // Blanks around '=' and comments, as GLib allows.
        #expect(try parse("# c\n[Application]\nname = org.example.App\n[Instance]\ninstance-id=7\n").appID == "org.example.App")
    }

    @Test func aRuntimeRunItselfIsNamedByItsRuntimeGroup() throws {
        let text = "[Runtime]\nname=org.freedesktop.Platform\n[Application]\nname=org.example.Decoy\n[Instance]\ninstance-id=1\n"
        #expect(try parse(text).appID == "org.freedesktop.Platform")
    }

    @Test(arguments: [
        ("no app group", "[Instance]\ninstance-id=1\n"),
        ("no name", "[Application]\nruntime=x\n[Instance]\ninstance-id=1\n"),
        ("no instance", "[Application]\nname=org.example.App\n"),
        ("group twice", "[Application]\nname=org.example.App\n[Instance]\ninstance-id=1\n[Application]\nname=org.evil.App\n"),
        ("key twice", "[Application]\nname=org.example.App\nname=org.evil.App\n[Instance]\ninstance-id=1\n"),
        ("key before any group", "name=org.evil.App\n[Application]\nname=org.example.App\n[Instance]\ninstance-id=1\n"),
        ("line without =", "[Application]\nname org.example.App\n[Instance]\ninstance-id=1\n"),
        ("unknown escape", "[Application]\nname=org.example\\qApp\n[Instance]\ninstance-id=1\n"),
        ("control character", "[Application]\nname=org.example.App\u{1}\n[Instance]\ninstance-id=1\n"),
        ("carriage return", "[Application]\r\nname=org.example.App\r\n[Instance]\r\ninstance-id=1\r\n"),
        ("bad group header", "[Application\nname=org.example.App\n[Instance]\ninstance-id=1\n"),
        ("one-element app id", "[Application]\nname=example\n[Instance]\ninstance-id=1\n"),
        ("empty element", "[Application]\nname=org..App\n[Instance]\ninstance-id=1\n"),
        ("slash in app id", "[Application]\nname=org.example/../App\n[Instance]\ninstance-id=1\n"),
        ("dash before the last element", "[Application]\nname=org.ex-ample.App\n[Instance]\ninstance-id=1\n"),
        ("escaped newline in app id", "[Application]\nname=org.example.App\\nx\n[Instance]\ninstance-id=1\n"),
        ("instance path traversal", "[Application]\nname=org.example.App\n[Instance]\ninstance-id=../../tmp\n"),
        ("empty instance", "[Application]\nname=org.example.App\n[Instance]\ninstance-id=\n"),
        ("long instance", "[Application]\nname=org.example.App\n[Instance]\ninstance-id=123456789012345678901\n"),
    ])
    func filesFlatpakWouldNotWriteAreRefused(_ what: String, text: String) {
        #expect(throws: FlatpakInfo.ParseError.self, "\(what)") { try parse(text) }
    }

    @Test func nonUTF8AndNULAreRefused() {
        var bytes = Array("[Application]\nname=org.example.App\n[Instance]\ninstance-id=1\n".utf8)
        bytes.insert(0xff, at: 20)
        #expect(throws: FlatpakInfo.ParseError.self) { try FlatpakInfo(parsing: bytes) }
        bytes[20] = 0
        #expect(throws: FlatpakInfo.ParseError.self) { try FlatpakInfo(parsing: bytes) }
    }

    @Test func appIDRules() {
        #expect(FlatpakInfo.isValidAppID("org.example.App"))
        #expect(FlatpakInfo.isValidAppID("org.example.my-app"))
        #expect(FlatpakInfo.isValidAppID("io.github.user_1.App2"))
        #expect(!FlatpakInfo.isValidAppID(String(repeating: "a.", count: 128) + "b"))  // 257 bytes
        #expect(FlatpakInfo.isValidAppID(String(repeating: "a.", count: 127) + "b"))  // 255 bytes
        #expect(!FlatpakInfo.isValidAppID(".org.example"))
        #expect(!FlatpakInfo.isValidAppID("org.example."))
        #expect(!FlatpakInfo.isValidAppID("org.exämple.App"))
        #expect(!FlatpakInfo.isValidAppID("org.example.App "))
    }

    @Test func aFileOverTheCapIsRefusedUnread() {
        let padding = String(repeating: "#", count: FlatpakInfo.maximumSize)
        let text = "[Application]\nname=org.example.App\n[Instance]\ninstance-id=1\n" + padding
        #expect(throws: FlatpakInfo.ParseError.tooLarge) { try parse(text) }
    }
}

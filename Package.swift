// swift-tools-version:6.1
import PackageDescription

// Test switches (`KEYWELL_TEST_*` environment variables that make keywelld quick to test) are
// compiled into debug builds only, or into a release build made with KEYWELL_TEST_SWITCHES=1 in
// the environment (keywell-bench's measurements; use a scratch path of its own). A shipped
// release keywelld ignores them (docs/contributing.md, "Test switches").
let testSwitches: [SwiftSetting] = Context.environment["KEYWELL_TEST_SWITCHES"] == "1"
    ? [.define("KEYWELL_TEST_SWITCHES")]
    : [.define("KEYWELL_TEST_SWITCHES", .when(configuration: .debug))]

let package = Package(
    name: "Keywell",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "KeywellCore", targets: ["KeywellCore"]),
        .library(name: "KeychainServices", targets: ["KeychainServices"]),
        .executable(name: "keywelld", targets: ["keywelld"]),
        .executable(name: "keywell", targets: ["keywell"]),
        .executable(name: "keywell-bench", targets: ["keywell-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `swift package generate-documentation --target KeychainServices` (docs/contributing.md).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // System libraries: Debian's -dev packages, found through pkg-config.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        // libcrypto only: "openssl" would also link libssl, which nothing uses, and keywelld would
        // load and relocate it for nothing (docs/performance.md, "The daemon").
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The control protocol's codes, from the header the PAM module includes (pam/keywell-control.h).
        .systemLibrary(name: "CKeywellControl"),
        // Sealing in a TPM 2.0 through TSS2's ESAPI (libtss2-dev), for the login unlock without a
        // typed password (docs/login-unlock.md). C, so that TSS2's structures stay on that side.
        .target(
            name: "CKeywellTPM",
            linkerSettings: [
                .linkedLibrary("tss2-esys"), .linkedLibrary("tss2-tctildr"), .linkedLibrary("tss2-mu"), .linkedLibrary("tss2-rc"),
            ]
        ),

        // Status codes, wire values and names shared by the engine, the daemon and the clients.
        .target(name: "KeywellProtocol", dependencies: ["CKeywellControl"]),
        // The keychain engine: files, crypto, items, SecItem semantics.
        .target(
            name: "KeywellCore",
            dependencies: [
                "KeywellProtocol", "KeywellSystem", "CSodium", "CSQLiteHardening",
                .product(name: "GRDB", package: "GRDB.swift"),
                // Item rows are bound and read through SQLite's C API on GRDB's cached statements.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // sqlite3_db_config, which is variadic, for the options every keychain connection sets
        // (docs/file-format.md, "What a keychain file may hold").
        .target(name: "CSQLiteHardening", linkerSettings: [.linkedLibrary("sqlite3")]),
        // What every part of the process shares: the one timer thread, a lock with timed waits,
        // the one way to start a thread or a child process, the one Unix-socket server, system
        // calls with one EINTR rule, and secret memory with its one wipe (docs/design.md).
        // CSodium: sodium_malloc and sodium_memzero; nothing here may need full Foundation.
        .target(name: "KeywellSystem", dependencies: ["CSodium"]),
        // A small Swift layer over libdbus-1.
        .target(name: "KeywellDBus", dependencies: ["CDBus", "KeywellProtocol", "KeywellSystem"]),
        // The Swift of every D-Bus interface Keywell serves, written from its XML in dbus/
        // (docs/dbus-layer.md, "Interfaces from XML"); scripts/codegen.sh runs the executable.
        .target(name: "DBusCodegen", dependencies: ["KeywellDBus"]),
        .executableTarget(name: "keywell-dbus-codegen", dependencies: ["DBusCodegen"]),
        // The native API on D-Bus: its interface table (from KeywellProtocol's NativeMethod) and
        // the one WireValue <-> DBusValue codec, shared by the daemon and the client library.
        .target(name: "KeywellAPI", dependencies: ["KeywellDBus", "KeywellProtocol"]),
        // The Secret Service's dh-ietf1024-sha256-aes128-cbc-pkcs7 session crypto, over OpenSSL.
        .target(name: "SecretServiceCrypto", dependencies: ["COpenSSL", "CSodium", "KeywellSystem"]),
        // The freedesktop Secret Service (org.freedesktop.secrets) over the keychain engine.
        .target(
            name: "KeywellSecretService",
            dependencies: [
                "CSodium", "KeywellAccess", "KeywellCore", "KeywellDBus", "KeywellIdentity", "KeywellProtocol", "KeywellSystem",
                "SecretServiceCrypto",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Readers of gnome-keyring's and libsecret's keyring files, and gnome-keyring's writer (no D-Bus).
        .target(name: "KeyringImport", dependencies: ["KeywellCore", "KeywellProtocol", "KeywellSystem", "COpenSSL", "CSodium"]),
        // Linux system calls Swift cannot reach (pidfd_open, pidfd_send_signal, openat2).
        .target(name: "CProcessPinning"),
        // Who a D-Bus caller is: application identities for access control (docs/access-control.md).
        .target(name: "KeywellIdentity", dependencies: ["KeywellDBus", "KeywellProtocol", "KeywellSystem", "CSodium", "CProcessPinning"]),
        // Access control's decisions and questions, shared by the native API and the Secret
        // Service (docs/access-control.md): verdicts, once-allowances, one question per burst.
        .target(
            name: "KeywellAccess",
            dependencies: ["KeywellProtocol", "KeywellIdentity", "KeywellSystem", .product(name: "Logging", package: "swift-log")]
        ),
        // The OpenSSH agent protocol (docs/ssh.md): its codec, the agent's semantics over a key
        // store the daemon supplies, and signatures (Ed25519 with libsodium, ECDSA and RSA with libcrypto).
        .target(
            name: "KeywellSSHAgent",
            dependencies: ["COpenSSL", "CSodium", "KeywellCore", "KeywellProtocol", "KeywellSSHWire", "KeywellSystem", .product(name: "Logging", package: "swift-log")]
        ),
        // The agent protocol's numbers, caps and wire encoding, and OpenSSH's private key files:
        // nothing else, so that the static CLI (`keywell ssh-add`) links it without the engine.
        .target(name: "KeywellSSHWire"),
        // The session service: native API, Secret Service, PAM hand-off, timers.
        .target(
            name: "KeywellDaemon",
            dependencies: [
                "CKeywellControl", "CKeywellTPM", "KeywellAccess", "KeywellAPI", "KeywellCore", "KeywellDBus", "KeywellIdentity",
                "KeywellProtocol", "KeywellSecretService", "KeywellSSHAgent", "KeywellSSHWire", "KeywellSync", "KeywellSystem",
                "KeyringImport", "SecretServiceCrypto", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testSwitches
        ),
        .executableTarget(name: "keywelld", dependencies: ["KeywellDaemon"]),
        // Sync between machines through a folder a sync engine carries (docs/sync.md): sealed
        // records, the folder's names and header, the merge rules, compaction.
        .target(name: "KeywellSync", dependencies: ["CSodium", "KeywellCore", "KeywellProtocol", "KeywellSystem", .product(name: "Logging", package: "swift-log")]),
        // The native API's client (org.keywell.Keychain1) on FoundationEssentials only, so that
        // the CLI loads neither full Foundation nor ICU (docs/performance.md).
        // CSodium: SHA-256 of programs named as trusted applications (`-T`); KeywellSystem: whether
        // such a program is one only root can replace.
        .target(name: "KeywellNativeClient", dependencies: ["KeywellAPI", "KeywellDBus", "KeywellProtocol", "KeywellSystem", "CSodium"]),
        // Apple-shaped client library over D-Bus.
        .target(name: "KeychainServices", dependencies: ["KeywellNativeClient", "KeywellAPI", "KeywellDBus", "KeywellProtocol"]),
        // The `keywell` command line (macOS `security`'s commands, git's credential helper) as a
        // library: the executable only calls it, and the CLI fuzz target links it.
        .target(name: "KeywellCLI", dependencies: ["CKeywellControl", "KeywellNativeClient", "KeywellDBus", "KeywellProtocol", "KeywellSSHWire", "KeywellSystem"]),
        // A static position-independent executable: a shell, git or a script starts it for every
        // lookup, and the dynamic loader's work (mapping and binding the Swift runtime, libdbus,
        // libsodium, libc) cost more than the lookup itself (docs/performance.md). Position-
        // independent, so its address is still randomised. Allowed here because Keywell is always
        // the root package. scripts/lib/link-keywell says what the linker needs besides;
        // CStaticDBusLink supplies libdbus's two libsystemd symbols.
        .executableTarget(
            name: "keywell",
            dependencies: ["KeywellCLI", "CStaticDBusLink"],
            linkerSettings: [
                .unsafeFlags(["-static-executable", "-Xclang-linker", "-static-pie",
                              "-use-ld=\(Context.packageDirectory)/scripts/lib/link-keywell"]),
                .linkedLibrary("_FoundationCollections"), .linkedLibrary("_FoundationCShims"), .linkedLibrary("swiftSynchronization"),
            ]
        ),
        // What libdbus's static archive needs besides libc when `keywell` links it (see above).
        .target(name: "CStaticDBusLink"),
        // A seeded generator, so that damage made "at random" (keywell-bench, tests) repeats exactly.
        .target(name: "DeterministicRandom"),
        .executableTarget(
            name: "keywell-bench",
            dependencies: [
                "CKeywellControl", "CSodium", "DeterministicRandom", "KeywellCore", "KeywellDBus", "KeywellIdentity", "KeychainServices", "KeywellProtocol",
                "KeywellSSHAgent", "KeywellSSHWire", "KeywellSync", "KeywellSystem", "SecretServiceCrypto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // What tests share: a private dbus-daemon, temporary XDG folders, child processes.
        .target(name: "KeywellTestSupport", dependencies: ["DBusCodegen", "KeywellDBus", "KeywellSystem"], path: "Tests/KeywellTestSupport"),
        .testTarget(
            name: "KeywellCoreTests",
            // KeywellSecretService: tests of free-form items go through the Secret Service's mapping.
            dependencies: ["DeterministicRandom", "KeywellCore", "KeywellProtocol", "KeywellSecretService", "KeywellSystem", "KeywellTestSupport"]
        ),
        .testTarget(
            name: "KeychainServicesTests",
            dependencies: ["KeychainServices", "KeywellNativeClient", "KeywellAPI", "KeywellProtocol", "KeywellSystem", "KeywellTestSupport"]
        ),
        .testTarget(
            name: "KeywellCLITests",
            dependencies: ["KeychainServices", "KeywellCLI", "KeywellProtocol", "KeywellSystem", "KeywellTestSupport"]
        ),
        .testTarget(
            name: "KeywellSecretServiceTests",
            dependencies: ["KeywellSecretService", "KeywellDaemon", "KeywellCore", "KeywellDBus", "KeywellSystem", "KeywellTestSupport"]
        ),
        .testTarget(name: "SecretServiceCryptoTests", dependencies: ["SecretServiceCrypto", "KeywellSystem"]),
        .testTarget(
            name: "KeywellSyncTests",
            dependencies: ["KeywellCore", "KeywellProtocol", "KeywellSync", "KeywellTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "KeywellSystemTests", dependencies: ["KeywellSystem", "KeywellTestSupport"]),
        .testTarget(name: "KeyringImportTests", dependencies: ["KeyringImport", "KeywellCore"]),
        .testTarget(name: "KeywellSSHAgentTests", dependencies: ["CSodium", "KeywellSSHAgent", "KeywellSSHWire", "KeywellCore", "KeywellSystem", "KeywellTestSupport"]),
        .testTarget(
            name: "KeywellAccessTests",
            dependencies: ["KeywellAccess", "KeywellIdentity", "KeywellProtocol", "KeywellSystem", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "KeywellIdentityTests", dependencies: ["DeterministicRandom", "KeywellIdentity", "KeywellDBus", "KeywellSystem", "KeywellTestSupport"]
        ),
        .testTarget(name: "KeywellDBusTests", dependencies: ["KeywellDBus", "KeywellSystem", "KeywellTestSupport"]),
        .testTarget(name: "DBusCodegenTests", dependencies: ["DBusCodegen", "KeywellDBus"]),
        .testTarget(
            name: "KeywellDaemonTests",
            dependencies: [
                "CKeywellControl", "KeywellAPI", "KeywellDaemon", "KeychainServices", "KeywellCore", "KeywellDBus",
                "KeywellProtocol", "KeywellSystem", "KeywellTestSupport",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Fuzz targets (libFuzzer): only when KEYWELL_FUZZ is set, as scripts/fuzz.sh does, because
// they have no main of their own (libFuzzer's runtime provides it under -sanitize=fuzzer) and
// would not link in an ordinary build. See Fuzz/README.md.
if Context.environment["KEYWELL_FUZZ"] != nil {
    let fuzzerFlags: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]
    package.targets += [
        .executableTarget(
            name: "QueryFuzzer", dependencies: ["KeywellCore", "KeywellProtocol"],
            path: "Fuzz/QueryFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "DBusDecodeFuzzer", dependencies: ["KeywellAPI", "KeywellDBus", "KeywellProtocol", "CDBus"],
            path: "Fuzz/DBusDecodeFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "KeychainHeaderFuzzer", dependencies: ["KeywellCore", "KeywellProtocol"],
            path: "Fuzz/KeychainHeaderFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "CLIArgumentFuzzer", dependencies: ["KeywellCLI", "KeywellSystem"],
            path: "Fuzz/CLIArgumentFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "SSHAgentFuzzer",
            dependencies: ["KeywellCore", "KeywellSSHAgent", "KeywellSSHWire", "KeywellSystem", .product(name: "Logging", package: "swift-log")],
            path: "Fuzz/SSHAgentFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "KeyringFileFuzzer", dependencies: ["COpenSSL", "KeyringImport", "KeywellCore", "KeywellProtocol"],
            path: "Fuzz/KeyringFileFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "ExportImportFuzzer", dependencies: ["KeywellCLI", "KeywellCore", "KeywellProtocol"],
            path: "Fuzz/ExportImportFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "ControlFrameFuzzer", dependencies: ["CKeywellControl", "KeywellCore", "KeywellProtocol", "KeywellSystem"],
            path: "Fuzz/ControlFrameFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "FlatpakInfoFuzzer", dependencies: ["KeywellSystem"],
            path: "Fuzz/FlatpakInfoFuzzer", swiftSettings: fuzzerFlags),
        .executableTarget(
            name: "PinentryReplyFuzzer", dependencies: ["KeywellCore", "KeywellProtocol", "KeywellSystem"],
            path: "Fuzz/PinentryReplyFuzzer", swiftSettings: fuzzerFlags),
    ]
}

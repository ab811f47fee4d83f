import KeywellNativeClient
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// What every command needs: the program name for messages, the daemon, keychain naming,
/// and the output streams.
final class CommandContext {
    let progname: String
    var diagnostics: Diagnostics
    /// Read from the environment when a command first needs it: a lookup that prints only the
    /// password never does (docs/performance.md).
    private(set) lazy var naming = KeychainNaming()
    /// The daemon, on the session bus; connecting happens on the first call. `shortLived`: a
    /// connection without an I/O thread, as one command's few calls need (docs/performance.md).
    let client: KeywellClient

    init(progname: String, quiet: Bool, client: KeywellClient = .shortLived) {
        self.progname = progname
        diagnostics = Diagnostics(progname: progname, quiet: quiet)
        self.client = client
    }

    var output: OutputStream { StandardStreams.output }

    /// The daemon name for a keychain argument, or the default keychain's when there is none.
    func keychainName(_ typed: String?) throws(KeychainError) -> String {
        if let typed { return naming.daemonName(for: typed) }
        return try client.defaultKeychain()
    }

    /// Overwrites an option's value in the process's own argv once it has been read, so that a
    /// password given with `-w`/`-p` stops showing in /proc/<pid>/cmdline as early as possible.
    /// (It was readable until now: the help says so, and how to avoid it.)
    func scrubFromArgv(_ option: GetoptParser.Option?) {
        guard let option, let location = option.valueLocation,
              location.word < Int(CommandLine.argc), let word = CommandLine.unsafeArgv[location.word] else { return }
        let length = strlen(word)
        guard location.offset < length else { return }
        SecretMemory.wipe(UnsafeMutableRawBufferPointer(start: word + location.offset, count: length - location.offset))
    }
}

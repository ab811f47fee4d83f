import Foundation

/// What the daemon does to itself first: keys must never reach a core file, another process of
/// the same user through ptrace or /proc/<pid>/mem, or files others could read.
enum ProcessHardening {
    static func apply() {
        // Not dumpable: no core file, and ptrace and /proc/<pid>/mem need CAP_SYS_PTRACE.
        _ = Prctl.call(Prctl.setDumpable, 0)
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
        umask(0o077)
    }

    static var isDumpable: Bool { Prctl.call(Prctl.getDumpable, 0) != 0 }
}

/// `prctl(2)`: variadic in C, so Swift cannot call it directly, and <sys/prctl.h> is not in the
/// Glibc module. Looked up at run time and called with its fixed integer arguments, which is
/// the same call on Linux's ABIs.
private enum Prctl {
    static let getDumpable: Int32 = 3  // PR_GET_DUMPABLE
    static let setDumpable: Int32 = 4  // PR_SET_DUMPABLE

    private typealias Function = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
    private static let function: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()

    static func call(_ option: Int32, _ argument: UInt) -> Int32 {
        function?(option, argument, 0, 0, 0) ?? -1
    }
}

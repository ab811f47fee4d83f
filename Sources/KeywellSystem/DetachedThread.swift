#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts a detached thread running `body`: the one way Keywell starts a thread (the timer
/// thread, the socket servers' accept loops and connections, the D-Bus worker pools, the sync
/// threads, keywell-bench's clients). Foundation's `Thread` without Foundation, so the client
/// side of the library needs only FoundationEssentials.
package func startDetachedThread(name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void) {
    // @unchecked: immutable; handed once from the starting thread to the new one.
    final class Start: @unchecked Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    pthread_attr_setstacksize(&attributes, stackSize)
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, &attributes, { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        // Linux caps a thread's name at 15 bytes.
        _ = ThreadNaming.setName?(pthread_self(), String(start.name.utf8.prefix(15))!)
        start.body()
        // glibc keeps an ended thread's stack for the next thread, with the 16 KiB below the
        // frame it ends from still resident (docs/performance.md, "The daemon").
        ThreadStack.releaseUnused(margin: ThreadStack.exitMargin)
        return nil
    }, start)
    precondition(status == 0, "pthread_create failed: \(status)")
}

/// glibc's `pthread_setname_np`, which Swift's Glibc module does not export; looked up once.
private enum ThreadNaming {
    typealias Function = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    static let setName: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_setname_np") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()
}

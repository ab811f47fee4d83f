import Foundation
import Logging

/// When the daemon has had nothing to do for a while, it gives memory back: the library pages
/// its last calls touched (`ResidentMemoryTrim`) and the heap malloc keeps free. A login
/// keychain service is idle almost all the time; its footprint then should be what it holds,
/// not what it once touched. The first call afterwards pays a few page faults.
final class IdleTrimmer: @unchecked Sendable {
    private let quietPeriod: Duration
    private let logger: Logger
    private let lock = NSLock()
    private var lastActivity = ContinuousClock.now
    private var trimmedSinceActivity = false

    init(quietPeriod: Duration = .seconds(10), logger: Logger) {
        self.quietPeriod = quietPeriod
        self.logger = logger
    }

    /// Called for every request (D-Bus or control socket); only a clock read under a lock.
    func noteActivity() {
        lock.withLock {
            lastActivity = ContinuousClock.now
            trimmedSinceActivity = false
        }
    }

    /// Trims after every quiet period that follows activity (start-up counts as activity).
    func start() {
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                let due = lock.withLock { () -> Bool in
                    guard !trimmedSinceActivity, ContinuousClock.now - lastActivity >= quietPeriod else { return false }
                    trimmedSinceActivity = true
                    return true
                }
                if due { trim() }
            }
        }
        thread.name = "idle-trim"
        thread.stackSize = 128 << 10
        thread.start()
    }

    private func trim() {
        let pages = ResidentMemoryTrim.apply()
        _ = MallocTrim.function?(0)
        logger.debug("idle: gave back \(pages) KiB of library pages")
    }
}

/// glibc's `malloc_trim`, which Swift's Glibc module does not export; looked up at run time.
private enum MallocTrim {
    typealias Function = @convention(c) (Int) -> Int32
    static let function: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()
}

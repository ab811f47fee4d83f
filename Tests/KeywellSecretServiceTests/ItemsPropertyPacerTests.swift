import Foundation
import KeywellSystem
import Testing

@testable import KeywellSecretService

/// A collection's `Items` after items were made or deleted: with every change while the list is
/// short, at most once per interval (the first at once, the rest in one later send) once long.
/// The interval is an hour here, so "within the interval" never depends on this machine's speed;
/// later sends are run by hand.
@Suite struct ItemsPropertyPacerTests {
    private let id = CollectionID.keychain("login")

    /// The sends and the later sends waiting, with the list length each send reports.
    private final class Recorder: Sendable {
        let sends = Protected(0)
        let later = Protected<[@Sendable () -> Void]>([])
        let length = Protected(0)

        func send() -> Int? {
            sends.withLock { $0 += 1 }
            return length.withLock { $0 }
        }

        func runLater() {
            let waiting = later.withLock { list in
                defer { list.removeAll() }
                return list
            }
            waiting.forEach { $0() }
        }
    }

    private func pacer(_ recorder: Recorder) -> ItemsPropertyPacer {
        ItemsPropertyPacer(shortLength: 2, interval: .seconds(3600)) { _, body in
            recorder.later.withLock { $0.append(body) }
        }
    }

    @Test func aShortListGoesOutWithEveryChange() {
        let recorder = Recorder()
        let pacer = pacer(recorder)
        recorder.length.withLock { $0 = 2 }
        for _ in 0..<10 { pacer.changed(id) { recorder.send() } }
        #expect(recorder.sends.withLock { $0 } == 10)
        #expect(recorder.later.withLock { $0.isEmpty })
    }

    @Test func aLongListGoesOutOnceAtOnceThenOnceForTheRestOfTheInterval() {
        let recorder = Recorder()
        let pacer = pacer(recorder)
        recorder.length.withLock { $0 = 3 }
        pacer.changed(id) { recorder.send() }  // the list was short until now: at once
        #expect(recorder.sends.withLock { $0 } == 1)
        for _ in 0..<50 { pacer.changed(id) { recorder.send() } }
        #expect(recorder.sends.withLock { $0 } == 1, "changes within the interval wait")
        #expect(recorder.later.withLock { $0.count } == 1, "and share one later send")
        recorder.runLater()
        #expect(recorder.sends.withLock { $0 } == 2)

        // Still long, and just sent: the next change waits again, in a new later send.
        pacer.changed(id) { recorder.send() }
        #expect(recorder.sends.withLock { $0 } == 2)
        #expect(recorder.later.withLock { $0.count } == 1)
        recorder.length.withLock { $0 = 1 }
        recorder.runLater()
        #expect(recorder.sends.withLock { $0 } == 3)

        // Short again: every change at once.
        pacer.changed(id) { recorder.send() }
        pacer.changed(id) { recorder.send() }
        #expect(recorder.sends.withLock { $0 } == 5)
    }

    @Test func collectionsArePacedApart() {
        let recorder = Recorder()
        let pacer = pacer(recorder)
        recorder.length.withLock { $0 = 3 }
        pacer.changed(id) { recorder.send() }
        pacer.changed(id) { recorder.send() }
        pacer.changed(.session) { recorder.send() }
        #expect(recorder.sends.withLock { $0 } == 2, "the other collection's first change goes at once")

        pacer.forget(id)
        pacer.changed(id) { recorder.send() }
        #expect(recorder.sends.withLock { $0 } == 3, "a collection deleted and made again starts afresh")
    }
}

import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

/// The daemon's trim after a burst gives the keychains' SQLite page caches back
/// (docs/performance.md, "The daemon"): the caches really shrink, and reads go on as before.
@Suite struct PageCacheReleaseTests {
    @Test func releasingPageCachesShrinksThemAndKeepsEveryItemReadable() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        // Enough rows for the file to span many pages: each add and lookup caches some.
        for n in 0..<300 {
            _ = try store.add(genp("account \(n)", "s", [WireKey.valueData: data(String(repeating: "v", count: 200))]))
        }
        for n in stride(from: 0, to: 300, by: 7) { _ = try store.copyMatching(genp("account \(n)", "s") + returnData) }
        let before = store.pageCacheBytes()
        #expect(before > 64 << 10, "the burst cached \(before) bytes")

        store.releasePageCaches()
        let after = store.pageCacheBytes()
        #expect(after * 4 < before, "still cached after the release: \(after) of \(before) bytes")

        for n in [0, 150, 299] {
            let found = try store.copyMatching(genp("account \(n)", "s") + returnData)
            #expect(found.count == 1)
            #expect(found.first?[WireKey.valueData] == data(String(repeating: "v", count: 200)))
        }
    }
}

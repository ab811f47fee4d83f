import Foundation
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// Real processes (`keywell-bench core-writer`) writing the same keychain file.
@Suite struct MultiProcessTests {
    private func startWriter(_ environment: TestEnvironment, prefix: String, count: Int) throws -> ChildProcess {
        try CoreWriter.start(CoreWriter.arguments(environment, keychain: "shared", prefix: prefix, count: count))
    }

    private func acknowledged(_ output: Data) -> [Int] { CoreWriter.acknowledged(output) }

    private func expectItems(_ store: KeychainStore, prefix: String, indices: [Int]) throws {
        for index in indices {
            let found = try store.copyMatching(
                genp("\(prefix)-\(index)", "core-writer") + returnData + [WireKey.useKeychain: .string("shared")])
            #expect(found == [[WireKey.valueData: data("secret \(prefix)-\(index)")]])
        }
    }

    @Test func twoProcessesWritingAtOnceLoseNothing() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["shared"])
        let count = 300
        let writers = try ["left", "right"].map { try startWriter(environment, prefix: $0, count: count) }
        // Write from this process at the same time too.
        for index in 0..<100 {
            _ = try store.add(genp("parent-\(index)", "core-writer", [WireKey.useKeychain: .string("shared")]))
        }
        for writer in writers {
            let finished = try writer.wait(timeout: .seconds(600))
            #expect(finished.termination.succeeded, "\(finished)")
            #expect(acknowledged(Data(finished.standardOutput)).count == count)
        }
        let all = try store.copyMatching(
            [WireKey.class: .string("genp"), "svce": .string("core-writer"), WireKey.useKeychain: .string("shared")] + limitAll)
        #expect(all.count == 2 * count + 100)
        try expectItems(store, prefix: "left", indices: Array(0..<count))
        try expectItems(store, prefix: "right", indices: Array(0..<count))
        #expect(try sqlite(environment.path(of: "shared"), "PRAGMA integrity_check") == "ok")
    }

    @Test func acknowledgedWritesSurviveKillNine() throws {
        let environment = try TestEnvironment()
        do {
            let creator = try environment.makeStore(with: ["shared"])
            try creator.lock("shared")
        }
        let writer = try startWriter(environment, prefix: "killed", count: 1_000_000)
        try writer.waitForStandardOutput(timeout: .seconds(600)) { acknowledged(Data($0)).count >= 200 }
        writer.kill(SIGKILL)
        let finished = try writer.wait(timeout: .seconds(60))
        let printed = Data(finished.standardOutput)
        #expect(finished.termination.signal == SIGKILL, "\(finished.termination)")
        let acked = acknowledged(printed)
        #expect(acked.count >= 200)
        #expect(acked == Array(0..<acked.count))

        #expect(try sqlite(environment.path(of: "shared"), "PRAGMA integrity_check") == "ok")
        let store = try environment.makeStore()
        try store.unlock("shared", password: secret("pw"))
        try expectItems(store, prefix: "killed", indices: acked)
    }
}

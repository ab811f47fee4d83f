import Foundation
import Testing

@testable import KeywellSystem

/// What `keywell session-display` may tell keywelld (docs/prompts.md, "A daemon started before
/// the desktop"): the three variables, each checked; anything else refused with its reason.
@Suite("Session display")
struct SessionDisplayTests {
    private func refusal(_ environment: [String: String], owner: uid_t = getuid()) -> String? {
        do {
            _ = try SessionDisplay(checking: environment, owner: owner)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func x11AndWaylandFormsAreTaken() throws {
        for display in [":0", ":12.1", "localhost:10", "unix:3", "host-1.example.org:2.0", "::1:0"] {
            #expect(try SessionDisplay(checking: ["DISPLAY": display]).environment == ["DISPLAY": display], "\(display)")
        }
        for wayland in ["wayland-0", "/run/user/1000/wayland-1"] {
            #expect(try SessionDisplay(checking: ["WAYLAND_DISPLAY": wayland]).environment == ["WAYLAND_DISPLAY": wayland])
        }
        // Empty values are left out, as if unset.
        #expect(try SessionDisplay(checking: ["DISPLAY": ":1", "WAYLAND_DISPLAY": ""]).environment == ["DISPLAY": ":1"])
    }

    @Test func malformedValuesAreRefusedWithTheVariableNamed() {
        for display in ["", "0", ":", ":x", ":1.2.3", "host:", "a b:1", ":1;rm", ":1\n", String(repeating: "h", count: 300) + ":1"] {
            let reason = refusal(["DISPLAY": display, "WAYLAND_DISPLAY": display.isEmpty ? "" : "wayland-0"])
            #expect(reason?.contains("DISPLAY") == true || reason?.contains("neither") == true, "\(display): \(reason ?? "taken")")
        }
        for wayland in ["../wayland-0", "a/b", "/run/../etc/x", "way land", String(repeating: "w", count: 200)] {
            #expect(refusal(["WAYLAND_DISPLAY": wayland])?.contains("WAYLAND_DISPLAY") == true, "\(wayland)")
        }
        #expect(refusal(["DISPLAY": ":1", "LD_PRELOAD": "/tmp/x.so"])?.contains("\"LD_PRELOAD\" is not one of") == true)
        #expect(refusal(["XAUTHORITY": "/tmp/x"])?.contains("neither DISPLAY nor WAYLAND_DISPLAY") == true)
    }

    @Test func xauthorityMustBeAnAbsolutePathToAFileOfTheUser() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("keywell-xauth-\(UUID().uuidString)").path
        try Data("cookie".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try SessionDisplay(checking: ["DISPLAY": ":1", "XAUTHORITY": file]).environment["XAUTHORITY"] == file)
        #expect(refusal(["DISPLAY": ":1", "XAUTHORITY": "relative/.Xauthority"])?.contains("not an absolute path") == true)
        #expect(refusal(["DISPLAY": ":1", "XAUTHORITY": file + "-missing"])?.contains("cannot be read") == true)
        #expect(refusal(["DISPLAY": ":1", "XAUTHORITY": file], owner: getuid() + 1)?.contains("not a file of this user") == true)
        #expect(refusal(["DISPLAY": ":1", "XAUTHORITY": FileManager.default.temporaryDirectory.path])?
            .contains("not a file of this user") == true)
    }

    @Test func learnedUntilForgotten() throws {
        let learned = LearnedSessionDisplay()
        #expect(learned.environment.isEmpty)
        #expect(learned.forget() == false)
        learned.learn(try SessionDisplay(checking: ["DISPLAY": ":5"]))
        #expect(learned.environment == ["DISPLAY": ":5"])
        learned.learn(try SessionDisplay(checking: ["WAYLAND_DISPLAY": "wayland-1"]))
        #expect(learned.environment == ["WAYLAND_DISPLAY": "wayland-1"])
        #expect(learned.forget() == true)
        #expect(learned.environment.isEmpty)
    }
}

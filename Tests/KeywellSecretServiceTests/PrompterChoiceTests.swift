import Foundation
import KeywellSystem
import KeywellTestSupport
import Testing

@testable import KeywellSecretService

/// Which dialog a prompt shows (docs/prompts.md), with real files on a PATH of the test's own.
@Suite struct PrompterChoiceTests {
    /// Folders made by `path(with:)`, kept until the test ends.
    private let folders = FolderKeeper()

    /// A folder holding executables with these names.
    private func path(with programs: [String]) throws -> String {
        let folder = try TemporaryDirectory()
        for name in programs { _ = try folder.write("#!/bin/sh\n", to: name, mode: 0o755) }
        folders.keep(folder)
        return folder.path
    }

    @Test func explicitPinentryWinsEvenWithoutADisplay() throws {
        let choice = PrompterChoice(environment: ["KEYWELL_PINENTRY": "/opt/my-pinentry", "PATH": try path(with: [])])
        #expect(choice.choose() == .pinentry(program: "/opt/my-pinentry", arguments: [], environment: [:]))
    }

    @Test func aDisplayPicksTheFirstGraphicalPinentryInOrder() throws {
        let search = try path(with: ["pinentry-qt", "pinentry-gnome3", "pinentry-curses"])
        let choice = PrompterChoice(environment: ["DISPLAY": ":3", "PATH": search])
        #expect(choice.choose() == .pinentry(program: "\(search)/pinentry-gnome3", arguments: [], environment: [:]))
        let qtOnly = try path(with: ["pinentry-qt"])
        #expect(PrompterChoice(environment: ["WAYLAND_DISPLAY": "wayland-0", "PATH": qtOnly]).choose()
            == .pinentry(program: "\(qtOnly)/pinentry-qt", arguments: [], environment: [:]))
    }

    @Test func aDisplayOnlyInTheActivationEnvironmentIsPassedOn() throws {
        let search = try path(with: ["pinentry-gnome3"])
        let choice = PrompterChoice(environment: ["PATH": search]) {
            ["DISPLAY": ":7", "XAUTHORITY": "/run/user/1/xauth", "LANG": "C"]
        }
        #expect(choice.choose() == .pinentry(program: "\(search)/pinentry-gnome3", arguments: [],
                                             environment: ["DISPLAY": ":7", "XAUTHORITY": "/run/user/1/xauth"]))
    }

    @Test func theSessionsDisplayComesAfterTheDaemonsOwnAndBeforeTheActivationEnvironment() throws {
        let search = try path(with: ["pinentry-gnome3"])
        let learned: @Sendable () -> [String: String] = { ["DISPLAY": ":4", "XAUTHORITY": "/home/u/.Xauthority"] }
        let activation: @Sendable () -> [String: String] = { ["DISPLAY": ":9"] }
        // Without a display of its own the daemon passes on the one the session told it.
        let learnedWins = PrompterChoice(environment: ["PATH": search], sessionDisplay: learned, activationEnvironment: activation)
        #expect(learnedWins.choose() == .pinentry(program: "\(search)/pinentry-gnome3", arguments: [],
                                                  environment: ["DISPLAY": ":4", "XAUTHORITY": "/home/u/.Xauthority"]))
        // Its own display needs nothing passed on.
        let own = PrompterChoice(environment: ["PATH": search, "DISPLAY": ":1"], sessionDisplay: learned, activationEnvironment: activation)
        #expect(own.choose() == .pinentry(program: "\(search)/pinentry-gnome3", arguments: [], environment: [:]))
        // Nothing learned (or forgotten): the activation environment, as before.
        let forgotten = PrompterChoice(environment: ["PATH": search], sessionDisplay: { [:] }, activationEnvironment: activation)
        #expect(forgotten.choose() == .pinentry(program: "\(search)/pinentry-gnome3", arguments: [], environment: ["DISPLAY": ":9"]))
    }

    @Test func gnomesDialogComesAfterAnExplicitPinentryAndBeforeTheGraphicalOnes() throws {
        let search = try path(with: ["pinentry-gnome3"])
        let present: @Sendable () -> PrompterChoice.SystemPrompter = { .activatable }
        // With a display and the prompter on the bus: GNOME's dialog, unless skipped after a failure.
        let gnome = PrompterChoice(environment: ["DISPLAY": ":3", "PATH": search], systemPrompter: present)
        #expect(gnome.choose() == .systemPrompter)
        #expect(gnome.choose(systemPrompter: false) == .pinentry(program: "\(search)/pinentry-gnome3", arguments: [], environment: [:]))
        // KEYWELL_PINENTRY still wins; without a display, or without the prompter, a pinentry.
        #expect(PrompterChoice(environment: ["DISPLAY": ":3", "KEYWELL_PINENTRY": "/opt/p", "PATH": search], systemPrompter: present)
            .choose() == .pinentry(program: "/opt/p", arguments: [], environment: [:]))
        guard case .unavailable = PrompterChoice(environment: ["PATH": search], systemPrompter: present).choose() else {
            Issue.record("GNOME's dialog chosen without a display"); return
        }
        #expect(PrompterChoice(environment: ["DISPLAY": ":3", "PATH": search], systemPrompter: { .absent }).choose()
            == .pinentry(program: "\(search)/pinentry-gnome3", arguments: [], environment: [:]))
    }

    @Test func aLearnedDisplayReachesGnomesDialogOnlyWhereThePrompterCanFindIt() throws {
        let search = try path(with: ["pinentry-gnome3"])
        let learned: @Sendable () -> [String: String] = { ["WAYLAND_DISPLAY": "wayland-0"] }
        // A running prompter has its display: the learned one is enough to choose it.
        #expect(PrompterChoice(environment: ["PATH": search], sessionDisplay: learned, systemPrompter: { .running }).choose()
            == .systemPrompter)
        // One the bus would start finds no display in an activation environment without one:
        // the pinentry gets the learned display instead.
        #expect(PrompterChoice(environment: ["PATH": search], sessionDisplay: learned, systemPrompter: { .activatable }).choose()
            == .pinentry(program: "\(search)/pinentry-gnome3", arguments: [], environment: ["WAYLAND_DISPLAY": "wayland-0"]))
        // Where the activation environment has a display too, the bus can start it there.
        #expect(PrompterChoice(environment: ["PATH": search], sessionDisplay: learned, activationEnvironment: { ["DISPLAY": ":9"] },
                               systemPrompter: { .activatable }).choose() == .systemPrompter)
    }

    @Test func aConfiguredTerminalGetsTheCursesPinentryThere() throws {
        let search = try path(with: ["pinentry-curses", "pinentry-tty"])
        let choice = PrompterChoice(environment: ["KEYWELL_PINENTRY_TTY": "/dev/null", "TERM": "vt100", "PATH": search])
        #expect(choice.choose() == .pinentry(program: "\(search)/pinentry-curses", arguments: ["--ttyname", "/dev/null"],
                                             environment: ["TERM": "vt100"]))
        // A file that is not a terminal device is refused, with the reason.
        let notATerminal = PrompterChoice(environment: ["KEYWELL_PINENTRY_TTY": search, "PATH": search]).choose()
        guard case .unavailable(let reason) = notATerminal else { Issue.record("\(notATerminal)"); return }
        #expect(reason.contains("is not a terminal"))
    }

    @Test func nothingToShowSaysWhy() throws {
        // pinentry-curses is there, but no terminal was configured: a daemon has none of its own.
        let search = try path(with: ["pinentry-curses", "pinentry"])
        guard case .unavailable(let reason) = PrompterChoice(environment: ["PATH": search]).choose() else {
            Issue.record("a prompter was chosen without a display or a terminal"); return
        }
        #expect(reason.contains("no display") && reason.contains("KEYWELL_PINENTRY_TTY"))
        guard case .unavailable(let graphical) = PrompterChoice(environment: ["DISPLAY": ":1", "PATH": search]).choose() else {
            Issue.record("pinentry-curses was chosen for a display"); return
        }
        #expect(graphical.contains("no graphical pinentry"))
    }

    @Test func assignmentsParse() {
        #expect(PrompterChoice.parse(assignments: ["A=1", "B=x=y", "junk", "C="]) == ["A": "1", "B": "x=y", "C": ""])
    }
}

private final class FolderKeeper: Sendable {
    private let folders = Protected<[TemporaryDirectory]>([])
    func keep(_ folder: TemporaryDirectory) { folders.withLock { $0.append(folder) } }
}

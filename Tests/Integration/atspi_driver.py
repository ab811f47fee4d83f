#!/usr/bin/python3
"""Drives a GTK program through AT-SPI (the accessibility bus), for the Seahorse test.

Run as a child with the test session's environment (DISPLAY, DBUS_SESSION_BUS_ADDRESS): AT-SPI
binds to the session it finds when it starts, so the test process itself never imports it. The
test starts one per command: a long-lived client, which runs no main loop, keeps a cached view of
the program's windows and never sees a modal question open. It reads JSON commands, one a line,
on stdin and answers each with one JSON line on stdout:

  {"op": "find", "app": "seahorse", "role": "push button", "name": "Add", "within": "Add Keyring"}
      -> {"ok": true, "found": [{"role", "name", "x", "y", "width", "height", "states", "actions"}...]}
  {"op": "do", ...same selector..., "action": "click", "index": 0}      one found object's action
  {"op": "text", ...selector..., "text": "..."}                         sets an editable text
  {"op": "select", ...selector...}                                      selects a list item (its parent's Selection)
  {"op": "focus", ...selector...}                                       grabs keyboard focus
  {"op": "dump", "app": "seahorse"}                                     the tree, for failure reports

Selectors: `role` and `name` match exactly when given (`name_contains` for part of a name);
`within` names a window (frame or dialog) the object must be in; `showing` (default true) only
objects on screen. Secrets typed this way are test passwords only.
"""
import json
import sys

import pyatspi


def windows(app_name):
    desktop = pyatspi.Registry.getDesktop(0)
    for index in range(desktop.childCount):
        app = desktop.getChildAtIndex(index)
        if app is None or (app_name and app.name != app_name):
            continue
        for window_index in range(app.childCount):
            window = app.getChildAtIndex(window_index)
            if window is not None:
                yield window


def walk(node, depth=0):
    yield node
    if depth > 60:
        return
    try:
        count = node.childCount
    except Exception:
        return
    for index in range(count):
        try:
            child = node.getChildAtIndex(index)
        except Exception:
            continue
        if child is not None:
            yield from walk(child, depth + 1)


def showing(node):
    try:
        states = node.getState()
        return states.contains(pyatspi.STATE_SHOWING) and states.contains(pyatspi.STATE_VISIBLE)
    except Exception:
        return False


def matches(node, command):
    try:
        if "role" in command and node.getRoleName() != command["role"]:
            return False
        name = node.name or ""
    except Exception:
        return False
    if "name" in command and name != command["name"]:
        return False
    if "name_contains" in command and command["name_contains"] not in name:
        return False
    if command.get("showing", True) and not showing(node):
        return False
    return True


def find(command):
    found = []
    for window in windows(command.get("app")):
        try:
            if "within" in command and window.name != command["within"]:
                continue
        except Exception:
            continue
        found.extend(node for node in walk(window) if matches(node, command))
    return found


def describe(node):
    info = {"role": node.getRoleName(), "name": node.name or ""}
    try:
        extents = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        info.update(x=extents.x, y=extents.y, width=extents.width, height=extents.height)
    except Exception:
        pass
    try:
        action = node.queryAction()
        info["actions"] = [action.getName(index) for index in range(action.nActions)]
    except Exception:
        info["actions"] = []
    try:
        info["states"] = [pyatspi.stateToString(state) for state in node.getState().getStates()]
    except Exception:
        info["states"] = []
    try:
        text = node.queryText()
        info["text"] = text.getText(0, text.characterCount)
    except Exception:
        pass
    try:
        info["image"] = node.queryImage().imageDescription or ""
    except Exception:
        pass
    return info


def one(command):
    found = find(command)
    index = command.get("index", 0)
    if len(found) <= index:
        raise LookupError(f"nothing matches {command}")
    return found[index]


def dump(command):
    lines = []
    for window in windows(command.get("app")):
        for node in walk(window):
            try:
                if showing(node):
                    image = describe(node).get("image")
                    lines.append(f"[{node.getRoleName()}] {node.name!r}" + (f" image={image!r}" if image is not None else ""))
            except Exception:
                continue
    return lines


def run(command):
    op = command["op"]
    if op == "find":
        return {"found": [describe(node) for node in find(command)]}
    if op == "do":
        node = one(command)
        action = node.queryAction()
        wanted = command.get("action", "click")
        for index in range(action.nActions):
            if action.getName(index) == wanted:
                return {"done": bool(action.doAction(index))}
        raise LookupError(f"no action {wanted} on {describe(node)}")
    if op == "text":
        node = one(command)
        return {"done": bool(node.queryEditableText().setTextContents(command["text"]))}
    if op == "select":
        node = one(command)
        parent = node.parent
        return {"done": bool(parent.querySelection().selectChild(node.getIndexInParent()))}
    if op == "focus":
        return {"done": bool(one(command).queryComponent().grabFocus())}
    if op == "dump":
        return {"lines": dump(command)}
    raise ValueError(f"unknown op {op}")


for line in sys.stdin:
    try:
        reply = {"ok": True, **run(json.loads(line))}
    except Exception as error:  # reported to the test, which decides
        reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()

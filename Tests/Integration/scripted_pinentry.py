#!/usr/bin/python3
"""A pinentry for tests: speaks the Assuan protocol like the real one, but answers GETPIN from a
script instead of a person.

SCRIPTED_PINENTRY_ANSWERS names a JSON file holding a list; each GETPIN takes the first entry:
a string is the password typed, null means the person pressed Cancel, {"hold": true} leaves the
dialog up (it logs HOLDING and answers nothing) until the caller ends it. An empty or missing list
cancels. SCRIPTED_PINENTRY_LOG, if set, receives every command line (one per line), so tests can
check what the dialog showed.

CONFIRM (an access question) takes the first entry too: "allow" answers OK (the OK button),
"always" ERR 83886194 (GPG_ERR_NOT_CONFIRMED from pinentry: the NOTOK button, Always Allow),
"deny", null or an empty list ERR 83886179 (cancelled); {"hold": true} as for GETPIN.
SCRIPTED_PINENTRY_RUNS, if set, gets one line per run of this program, so tests can count dialogs.
"""
import json
import os
import sys


def log(line: str) -> None:
    path = os.environ.get("SCRIPTED_PINENTRY_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def next_answer():
    path = os.environ.get("SCRIPTED_PINENTRY_ANSWERS")
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        answers = json.load(f)
    if not answers:
        return None
    answer = answers.pop(0)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(answers, f)
    return answer


def escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def reply(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


CONFIRM_REPLIES = {
    "allow": "OK",
    "always": "ERR 83886194 Not confirmed <Pinentry>",
    "deny": "ERR 83886179 Operation cancelled <Pinentry>",
}

runs = os.environ.get("SCRIPTED_PINENTRY_RUNS")
if runs:
    with open(runs, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")

reply("OK Pleased to meet you")
for raw in sys.stdin:
    line = raw.rstrip("\n")
    log(line)
    command = line.split(" ", 1)[0]
    if command == "GETPIN":
        answer = next_answer()
        if isinstance(answer, dict) and answer.get("hold"):
            log("HOLDING")
            sys.stdin.read()
            break
        if answer is None:
            reply("ERR 83886179 Operation cancelled <Pinentry>")
        else:
            if answer:
                reply("D " + escape(answer))
            reply("OK")
    elif command == "CONFIRM":
        answer = next_answer()
        if isinstance(answer, dict) and answer.get("hold"):
            log("HOLDING")
            sys.stdin.read()
            break
        reply(CONFIRM_REPLIES.get(answer, CONFIRM_REPLIES["deny"]) if isinstance(answer, str) else CONFIRM_REPLIES["deny"])
    elif command == "BYE":
        reply("OK closing connection")
        break
    else:
        reply("OK")

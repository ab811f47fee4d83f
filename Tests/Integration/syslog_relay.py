#!/usr/bin/python3
"""Where PAM modules' syslog() goes in a test machine without journald or rsyslog: binds
/dev/log and appends every datagram, one a line, to a file that every SyslogCapture reads from
its own offset (pam_helpers.py). One relay serves every test run on the machine at once, so that
two suites running side by side (two CI jobs, the security report beside the tests) never take
/dev/log from each other. It leaves after IDLE_SECONDS without a datagram.

    syslog_relay.py FOLDER    (FOLDER/messages is the file, FOLDER/lock says a relay runs)
"""
import fcntl
import os
import socket
import sys

IDLE_SECONDS = 900


def dev_log_alive() -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect("/dev/log")
        return True
    except OSError:
        return False
    finally:
        probe.close()


def main(folder: str) -> int:
    os.makedirs(folder, mode=0o700, exist_ok=True)
    lock = open(os.path.join(folder, "lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another relay runs
    if dev_log_alive():
        return 0  # a real syslog daemon (or a capture of an older kind) listens
    if os.path.lexists("/dev/log"):
        os.unlink("/dev/log")  # a dead socket: nobody reads it anyway
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("/dev/log")
    os.chmod("/dev/log", 0o666)  # modules log from processes of the throwaway users too
    sock.settimeout(IDLE_SECONDS)
    with open(os.path.join(folder, "messages"), "ab", buffering=0) as out:
        while True:
            try:
                data = sock.recv(65536)
            except socket.timeout:
                break
            out.write(data.replace(b"\n", b" ") + b"\n")
    os.unlink("/dev/log")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

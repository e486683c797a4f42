#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal of 120x40, as a person's terminal
would, with nothing typed: what the command draws goes to the file LOG.
It ends when the command does, or kills the command's process group on
SIGTERM (the test stops an interactive Qwen Code this way).

Usage: pty_run.py LOG COMMAND [ARG...]
"""

import fcntl
import os
import pty
import signal
import struct
import sys
import termios


def main():
    log_path, command = sys.argv[1], sys.argv[2:]
    pid, master = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))

    def stop(_signum, _frame):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, stop)
    with open(log_path, "ab", buffering=0) as log:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            log.write(chunk)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


main()

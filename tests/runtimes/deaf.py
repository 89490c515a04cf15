# A Python program asked for its traceback (SIGABRT) that never finishes it (tests/dump-runtimes.sh):
# a runtime whose dump does not end. It says "ready stuck PID" on $HELPER_EVENTS once its handler
# is in place; asked, it prints the first line of a dump and goes on waiting. It ignores TERM and
# INT: only a KILL ends it.
import os
import signal
import sys


def asked(signum, frame):
    sys.stderr.write("deaf: dump begun, never ended\n")
    sys.stderr.flush()


signal.signal(signal.SIGABRT, asked)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
with open(os.environ["HELPER_EVENTS"], "a") as f:
    f.write("ready stuck %d\n" % os.getpid())
while True:
    signal.pause()

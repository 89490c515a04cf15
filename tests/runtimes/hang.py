# A Python program whose threads wait forever in known functions (tests/dump-runtimes.sh): it
# says "ready stuck PID" on $HELPER_EVENTS once the worker is inside its function.
import os
import threading

inside = threading.Event()


def stuck_in_python_wait(never):
    inside.set()
    never.wait()


def main_waits_forever():
    with open(os.environ["HELPER_EVENTS"], "a") as f:
        f.write("ready stuck %d\n" % os.getpid())
    threading.Event().wait()


threading.Thread(target=stuck_in_python_wait, args=(threading.Event(),), name="stuck-worker").start()
inside.wait()
main_waits_forever()

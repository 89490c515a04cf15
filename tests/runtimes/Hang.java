// A Java program whose threads wait forever in known methods (tests/dump-runtimes.sh): it says
// "ready stuck PID" on $HELPER_EVENTS once the worker is waiting.
import java.io.FileWriter;

public class Hang {
    static void stuckInJavaWait(Object never) throws InterruptedException {
        synchronized (never) {
            never.wait();
        }
    }

    public static void main(String[] args) throws Exception {
        Thread worker = new Thread(() -> {
            try {
                stuckInJavaWait(new Object());
            } catch (InterruptedException e) {
            }
        }, "stuck-worker");
        worker.start();
        while (worker.getState() != Thread.State.WAITING)
            Thread.onSpinWait();
        try (FileWriter f = new FileWriter(System.getenv("HELPER_EVENTS"), true)) {
            f.write("ready stuck " + ProcessHandle.current().pid() + "\n");
        }
        stuckInJavaWait(new Object());
    }
}

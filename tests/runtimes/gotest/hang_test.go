// A Go test that blocks forever in a known function (tests/dump-runtimes.sh, run by `go test`):
// it says "ready stuck PID" on $HELPER_EVENTS once the worker is inside its function.
package hang

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

//go:noinline
func stuckInGoTest(m *sync.Mutex, inside chan<- bool) {
	inside <- true
	m.Lock()
}

func TestStuck(t *testing.T) {
	var m sync.Mutex
	m.Lock()
	inside := make(chan bool)
	go stuckInGoTest(&m, inside)
	<-inside
	f, err := os.OpenFile(os.Getenv("HELPER_EVENTS"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "ready stuck %d\n", os.Getpid())
	f.Close()
	for {
		time.Sleep(time.Hour)
	}
}

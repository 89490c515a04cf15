// A Go program whose goroutines block forever in known functions (tests/dump-runtimes.sh): it
// says "ready stuck PID" on $HELPER_EVENTS once the worker is inside its function.
package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

//go:noinline
func stuckInGoLock(m *sync.Mutex, inside chan<- bool) {
	inside <- true
	m.Lock()
}

func main() {
	var m sync.Mutex
	m.Lock()
	inside := make(chan bool)
	go stuckInGoLock(&m, inside)
	<-inside
	f, err := os.OpenFile(os.Getenv("HELPER_EVENTS"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		os.Exit(1)
	}
	fmt.Fprintf(f, "ready stuck %d\n", os.Getpid())
	f.Close()
	mainSleeps()
}

// A timer, not select{}: with every goroutine blocked on locks the runtime would call it a
// deadlock and exit.
//
//go:noinline
func mainSleeps() {
	for {
		time.Sleep(time.Hour)
	}
}

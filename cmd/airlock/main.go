// Command airlock runs a command in a staged copy of a directory and
// applies its changes back only through one all-or-nothing commit.
package main

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/cli"
	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/watchd"
)

func main() {
	// First: a start of this binary as the same-path mount helper never
	// returns from Init.
	launch.Init()
	// Then: a start of it as the state root's watch daemon serves, and
	// exits.
	watchd.Main()
	limitMemory()
	io := cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrTerminal: isTerminal(os.Stderr)}
	stop := profile()
	code := cli.Main(context.Background(), os.Args[1:], io)
	stop()
	os.Exit(code)
}

// isTerminal reports whether f is a terminal: one answers for its
// settings. A character device is not enough: /dev/null is one, and a
// script that sends stderr there, or a hook whose stderr is a pipe, reads
// the airlock.* block, not a summary for a person.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), getTermios)
	return err == nil
}

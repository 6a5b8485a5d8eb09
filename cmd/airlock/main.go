// Command airlock runs a command in a staged copy of a directory and
// applies its changes back only through one all-or-nothing commit.
package main

import (
	"context"
	"os"

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

// isTerminal reports whether f is a character device, which is what a
// terminal is; progress lines go to stderr only then.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

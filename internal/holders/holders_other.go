//go:build !linux

package holders

import (
	"errors"
	"fmt"
	"time"
)

// Holder is a process that can still reach a tree.
type Holder struct {
	PID     int
	Command string
	How     string
}

func (h Holder) String() string {
	return fmt.Sprintf("process %d (%s) holds it: %s", h.PID, h.Command, h.How)
}

// Find cannot look at other processes' descriptors here (no /proc), so
// it cannot prove a tree free and says so: pooled trees are not reused.
func Find(string, FileIDs, time.Time) ([]Holder, error) {
	return nil, errors.New("this system has no /proc to prove that no process holds a pooled tree")
}

// Marked cannot list other processes' environments here.
func Marked(string) []Holder { return nil }

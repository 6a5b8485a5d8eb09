package journal

import (
	"fmt"
	"sort"
	"strings"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// BusyError reports a process that holds a file the apply replaced or
// deleted open for writing. What it writes after the commit would go to a
// file no longer in the tree, so the commit must not stand: it is rolled
// back, and the file the process holds is put back at its path.
type BusyError struct {
	Path    string
	PID     int
	Command string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("process %d (%s) holds %s open for writing: what it writes after the commit would go to the replaced file, outside the tree", e.PID, e.Command, e.Path)
}

// fileID names an inode.
type fileID struct{ dev, ino uint64 }

// settleAside decides on the entries an apply moved aside (aside maps an
// operation's index to the temporary name its old entry now has). Each must
// still be exactly what the journal backed up: an edit a writer completed
// after the guard's last look, through a descriptor it opened before the
// swap, shows here as a difference, and the commit refuses and rolls back
// (the edited file is kept for the user, never unlinked). A process that
// still holds one of them open for writing refuses the commit too, where
// the system lets airlock see it (Linux /proc). Only then are the old
// entries removed. With under set, only the entries beneath that directory
// are settled: the removals settle those before the directory itself goes.
func settleAside(root *safefs.Root, j *Journal, aside map[int]string, under string) error {
	idx := make([]int, 0, len(aside))
	for i := range aside {
		if under == "" || strings.HasPrefix(j.Ops[i].Path, under+"/") {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	ids := map[fileID]string{}
	for _, i := range idx {
		op := &j.Ops[i]
		if err := matches(root, aside[i], op.Before); err != nil {
			return &DriftError{Path: op.Path}
		}
		if op.Before.Kind == manifest.KindFile {
			info, err := root.Lstat(aside[i])
			if err != nil {
				return err
			}
			ids[fileID{info.Dev, info.Ino}] = op.Path
		}
	}
	if len(ids) > 0 {
		if b := openWriter(ids, TempPrefix(j.TxID)); b != nil {
			return b
		}
	}
	for _, i := range idx {
		if err := root.Remove(aside[i]); err != nil {
			return err
		}
		delete(aside, i)
	}
	return nil
}

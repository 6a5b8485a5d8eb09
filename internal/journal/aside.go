package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

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
	if err := release(j, idx); err != nil {
		return err
	}
	for _, i := range idx {
		if err := root.Remove(aside[i]); err != nil {
			return err
		}
		delete(aside, i)
	}
	return nil
}

// releasedFile, in a journal's directory, lists the operations whose
// original entry the apply unlinked. Once an inode is unlinked the file
// system may give its number to a file created later — a restore's own
// temporary file, say — so a restore must not take an entry for the
// original by its device and inode for these operations.
const releasedFile = "released"

// release records, durably and before any of them is unlinked, that the
// original entries of the operations idx are let go.
func release(j *Journal, idx []int) error {
	if j.dir == "" || len(idx) == 0 {
		return nil
	}
	p := filepath.Join(j.dir, releasedFile)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("journal %s: %w", p, err)
	}
	var b strings.Builder
	for _, i := range idx {
		fmt.Fprintf(&b, "%d\n", i)
	}
	_, err = f.WriteString(b.String())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal %s: %w", p, err)
	}
	return safefs.SyncDir(j.dir)
}

// releasedOps reads which operations' originals an apply let go.
func releasedOps(dir string) (map[int]bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, releasedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[int]bool{}
	for _, l := range strings.Fields(string(b)) {
		i, err := strconv.Atoi(l)
		if err != nil {
			return nil, fmt.Errorf("journal %s: corrupt line %q", filepath.Join(dir, releasedFile), l)
		}
		out[i] = true
	}
	return out, nil
}

package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckTree refuses the subtree name of the transaction's state (a journal
// with its backups) unless every entry in it is a directory or a regular
// file that airlock could have written: owned by the user, not writable by
// group or others, no symlink, FIFO, socket or device. It is for subtrees
// that are read and acted on by path, by code outside this package, so
// that they get the checks every other state file gets before anything in
// them is trusted. Below the subdirectories named in data (relative to
// name), a symlink owned by the user is accepted: it is content kept aside,
// which is moved but never followed. A missing name matches
// fs.ErrNotExist.
func (t *Tx) CheckTree(name string, data ...string) error {
	path, err := t.resolve(name)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	keep := make(map[string]bool, len(data))
	for _, d := range data {
		keep[filepath.Join(path, filepath.FromSlash(d))] = true
	}
	return checkTree(path, fi, keep, false)
}

func checkTree(path string, fi fs.FileInfo, data map[string]bool, inData bool) error {
	if inData && fi.Mode().Type() == fs.ModeSymlink {
		// A symlink's own mode is always 0777 and means nothing; its owner
		// says who made it.
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int64(st.Uid) != int64(os.Getuid()) {
			return checkInfo(path, fi, fs.ModeSymlink)
		}
		return nil
	}
	want := fs.FileMode(0)
	if fi.IsDir() {
		want = fs.ModeDir
	}
	if err := checkInfo(path, fi, want); err != nil {
		return err
	}
	if !fi.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("check state directory %s: %w", path, err)
	}
	for _, e := range entries {
		child := filepath.Join(path, e.Name())
		cfi, err := os.Lstat(child)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("check state file %s: %w", child, err)
		}
		if err := checkTree(child, cfi, data, inData || data[child]); err != nil {
			return err
		}
	}
	return nil
}

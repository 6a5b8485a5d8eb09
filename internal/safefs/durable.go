package safefs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile durably and atomically replaces path with data: a reader sees
// the old file or the new one, never a torn one, and after WriteFile returns
// the new content survives a crash.
//
// The order is the one restic's local backend uses: write a temporary file
// in the same directory, fsync it so its bytes are on disk before any name
// points at them, rename it over the target, then fsync the directory to
// commit the rename itself.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if err := WriteFileUnsynced(path, data, perm); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	return SyncDir(dir)
}

// WriteFileUnsynced is WriteFile without the directory's fsync: the bytes
// are on disk before the name points at them, and the caller syncs the
// directory once all its files are in.
func WriteFileUnsynced(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer tmp.Cleanup()
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Rename(path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// TempFile is a file written under a temporary name in the directory where
// it will live, and published under its real name only once its bytes are
// on disk: WriteFile's steps, for a caller that streams the content, checks
// it before publishing, or must not replace an existing file.
//
// Neither way of publishing fsyncs the directory: a caller that publishes
// many files into one directory syncs it once ([SyncDir]) when all are in.
type TempFile struct {
	*os.File
	gone bool // the temporary name no longer exists
}

// CreateTemp creates a TempFile (mode 0600) in dir; pattern is as for
// os.CreateTemp.
func CreateTemp(dir, pattern string) (*TempFile, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &TempFile{File: f}, nil
}

// Rename fsyncs and closes the file, then renames it over path.
func (t *TempFile) Rename(path string) error {
	if err := t.finish(); err != nil {
		return err
	}
	if err := os.Rename(t.Name(), path); err != nil {
		return err
	}
	t.gone = true
	return nil
}

// Link fsyncs and closes the file, then publishes it under path with
// link(2), which fails (with an error matching fs.ErrExist) when path is
// taken, and drops the temporary name.
func (t *TempFile) Link(path string) error {
	if err := t.finish(); err != nil {
		return err
	}
	if err := os.Link(t.Name(), path); err != nil {
		return err
	}
	// Drop the temporary name before the caller's directory fsync, so
	// that a crash cannot resurrect it beside the published file.
	if err := os.Remove(t.Name()); err != nil {
		return fmt.Errorf("remove temporary file: %w", err)
	}
	t.gone = true
	return nil
}

// RenameSynced renames the file, closed without an fsync of its own, over
// path: for a caller that writes many temporary files, closes each, makes
// them all durable with one [FSSync.Sync] of their file system, and only
// then publishes them. It must not be called before that flush.
func (t *TempFile) RenameSynced(path string) error {
	if err := os.Rename(t.Name(), path); err != nil {
		return err
	}
	t.gone = true
	return nil
}

// finish makes the bytes durable before any other name points at them.
func (t *TempFile) finish() error {
	if err := t.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	return t.Close()
}

// Cleanup closes the file and removes its temporary name unless it was
// published; defer it right after CreateTemp.
func (t *TempFile) Cleanup() {
	t.Close()
	if !t.gone {
		os.Remove(t.Name())
	}
}

// SyncDir fsyncs a directory so that the names created, renamed or removed
// in it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// removeTree deletes path and everything below it without following
// symlinks and without crossing into a mounted filesystem: a staged
// workspace that is still mounted (overlay, bind) would otherwise have its
// mounted content — possibly the base itself — deleted through the mount.
// Directories the command made read-only are made writable so they can be
// emptied.
func removeTree(path string) error {
	parent, err := os.Lstat(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return removeBelow(path, devOf(parent))
}

func removeBelow(path string, parentDev uint64) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if !fi.IsDir() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return nil
	}
	if err := refuseMount(path, fi, parentDev); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o700 != 0o700 {
		if err := os.Chmod(path, 0o700); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: make it writable: %w", path, err)
		}
	}
	entries, err := os.ReadDir(path)
	if errors.Is(err, fs.ErrNotExist) {
		// Another deleter got there first (the detached remover of a
		// retired staged tree, which lives inside the transaction): it
		// empties a directory before removing it, so nothing is left below.
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	dev := devOf(fi)
	for _, e := range entries {
		if err := removeBelow(filepath.Join(path, e.Name()), dev); err != nil {
			return err
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// refuseMounts checks dir and the directories up to depth levels below it
// for mount points, before a removal that could not be undone part-way.
func refuseMounts(dir string, depth int) error {
	parent, err := os.Lstat(filepath.Dir(dir))
	if err != nil {
		return err
	}
	return refuseMountsBelow(dir, devOf(parent), depth)
}

func refuseMountsBelow(dir string, parentDev uint64, depth int) error {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return nil
	}
	if err := refuseMount(dir, fi, parentDev); err != nil {
		return err
	}
	if depth == 0 {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // the removal itself will report it
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := refuseMountsBelow(filepath.Join(dir, e.Name()), devOf(fi), depth-1); err != nil {
				return err
			}
		}
	}
	return nil
}

func refuseMount(path string, fi fs.FileInfo, parentDev uint64) error {
	if devOf(fi) != parentDev || isMountRoot(path) {
		return fmt.Errorf("%s is a mount point; unmount it first (airlock never deletes through a mount)", path)
	}
	return nil
}

func devOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

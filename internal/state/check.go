package state

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/airlockdev/airlock/internal/safefs"
)

// checkInfo decides whether fi, found at path, may be trusted as state of
// type want (fs.ModeDir for a directory, 0 for a regular file).
func checkInfo(path string, fi fs.FileInfo, want fs.FileMode) error {
	if typ := fi.Mode().Type(); typ != want {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("is %s, not %s", safefs.TypeName(typ), safefs.TypeName(want))}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &UnsafeError{Path: path, Reason: "its owner cannot be determined"}
	}
	if uid := os.Getuid(); int64(st.Uid) != int64(uid) {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("is owned by uid %d, not the current user (uid %d)", st.Uid, uid)}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("is writable by group or others (mode %04o)", perm)}
	}
	return nil
}

// checkDir refuses path unless it is a trustworthy directory. A missing
// directory is returned as the Lstat error so callers can tell it apart.
func checkDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return checkInfo(path, fi, fs.ModeDir)
}

// ensureDir creates path (0700) if it is missing, then checks it.
func ensureDir(path string) error {
	err := os.Mkdir(path, 0o700)
	switch {
	case err == nil:
		if err := safefs.SyncDir(filepath.Dir(path)); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("create state directory %s: %w", path, err)
	}
	if err := checkDir(path); err != nil {
		return stateErr("state directory", path, err)
	}
	return nil
}

// stateErr gives a bare filesystem error the context of what was being
// checked, and leaves refusals (which already name the path) alone.
func stateErr(what, path string, err error) error {
	if err == nil {
		return nil
	}
	var ue *UnsafeError
	if errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("%s %s: %w", what, path, err)
}

// openChecked opens the regular file at path without following a symlink
// and without blocking on a FIFO, and refuses it unless it is trustworthy.
// The Lstat before the open keeps airlock from ever opening a device or FIFO
// planted in its state; the fstat after it closes the gap between the two.
func openChecked(path string, flag int, perm fs.FileMode) (*os.File, error) {
	fi, err := os.Lstat(path)
	switch {
	case err == nil:
		if err := checkInfo(path, fi, 0); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0:
	default:
		return nil, err
	}
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &UnsafeError{Path: path, Reason: "is a symlink, not a regular file"}
		}
		return nil, err
	}
	fi, err = f.Stat()
	if err == nil {
		err = checkInfo(path, fi, 0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readChecked reads a whole state file after checking it. A missing file
// is reported with an error that matches fs.ErrNotExist.
func readChecked(path string) ([]byte, error) {
	f, err := openChecked(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, stateErr("read state file", path, err)
	}
	defer f.Close()
	// Read into a buffer of the size openChecked saw (one more byte, to
	// see the end without growing it): a large manifest read by
	// io.ReadAll's growing buffer is copied over and over.
	size := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<30 {
		size = fi.Size() + 1
	}
	data := make([]byte, 0, size)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read state file %s: %w", path, err)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // grown: the file grew since
		}
	}
}

// OpenFile opens a state file that another package keeps (the originals
// store) with the checks every state file gets: never through a symlink,
// never blocking on a FIFO, a regular file of the user's own that group
// and others cannot write. A refusal is an *UnsafeError naming the file.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := openChecked(path, flag, perm)
	if err != nil {
		return nil, stateErr("state file", path, err)
	}
	return f, nil
}

// CheckDir refuses a state directory another package keeps unless it is a
// directory of the user's own that group and others cannot write. A
// missing directory is reported with an error matching fs.ErrNotExist.
func CheckDir(path string) error {
	return stateErr("state directory", path, checkDir(path))
}

// ReadFile reads a state file through the same checks as the store's own
// files: it must be a regular file of the current user that no one else
// can write.
func ReadFile(path string) ([]byte, error) { return readChecked(path) }

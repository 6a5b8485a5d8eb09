package safefs

import (
	"fmt"
	"os"
)

// FSSync makes everything written to one file system durable in a single
// call: the data and inode of every file, and the entries of every
// directory, written there since the handle was opened. A caller that
// writes many files opens one before its writes, writes them without an
// fsync each, and calls Sync at the point where they must be on disk: one
// flush of the file system instead of one per file and directory.
//
// It exists only where that one call is known to stand for the fsyncs it
// replaces (OpenFSSync says when); elsewhere the caller fsyncs each file
// and directory itself.
type FSSync struct {
	f *os.File
}

// FSSyncMin is the fewest files a caller should batch into one FSSync:
// below it, an fsync of each costs less than a flush of the whole file
// system, which also writes out whatever other programs left dirty there.
const FSSyncMin = 16

// OpenFSSync opens a handle on the file system that holds the directory
// dir. It returns nil and no error where one flush of the whole file
// system cannot stand for an fsync of each file ([Root.FSSync] says
// when): the caller then fsyncs each file and directory as it writes them.
func OpenFSSync(dir string) (*FSSync, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s to sync its file system: %w", dir, err)
	}
	if !wholeSyncStands(int(f.Fd())) {
		f.Close()
		return nil, nil
	}
	return &FSSync{f: f}, nil
}

// FSSync opens a handle on the root's file system, on the root's own
// descriptor (opened before anything the caller writes through it). It
// returns nil and no error where one flush cannot stand for fsyncs: on
// Linux before 5.8, whose syncfs(2) does not report a failed write-back
// of the data it flushes; on a file system not known to commit its
// journal in syncfs (FUSE, NFS, overlayfs and others: only ext4, XFS,
// btrfs, f2fs, bcachefs and tmpfs are trusted); on macOS, which has no
// syncfs; and where the test environment turns it off
// (AIRLOCK_TEST_OFF=syncfs, in a build with the tag airlock_faults).
func (r *Root) FSSync() (*FSSync, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.fd < 0 {
		return nil, r.pathErr("syncfs", "", os.ErrClosed)
	}
	if !wholeSyncStands(r.fd) {
		return nil, nil
	}
	fd, err := dupFd(r.fd)
	if err != nil {
		return nil, r.pathErr("syncfs", "", err)
	}
	return &FSSync{f: os.NewFile(uintptr(fd), r.path)}, nil
}

// Sync flushes the whole file system and reports a write-back that failed
// since the handle was opened.
func (s *FSSync) Sync() error {
	if err := syncfs(int(s.f.Fd())); err != nil {
		return fmt.Errorf("sync the file system of %s: %w", s.f.Name(), err)
	}
	return nil
}

// Close releases the handle. A nil handle may be closed.
func (s *FSSync) Close() {
	if s != nil {
		s.f.Close()
	}
}

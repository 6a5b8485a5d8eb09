package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"golang.org/x/sys/unix"
)

// mover moves frozen objects into the base as its new files, instead of
// copying their bytes into new files there: one file made per new file
// of a commit, not two. It stands in for the copy only where the result
// is the same file a copy would make, and where the order a power cut
// would expose is the same:
//
//   - the objects are on the base's file system, and their directory
//     gives its files nothing a file created in the base would not get
//     (safefs.NoInherited), nor does the directory in the base that the
//     file is moved to (Root.Adopts): the same owner and group, no ACL,
//     no inherited inode flags;
//   - an object is moved only with its one name, made by this process's
//     user, and only once its bytes hash to the digest the journal
//     names, as a copy's must;
//   - the apply batches its durability into flushes of the file system
//     (applier.fss): the objects' bytes were made durable by the freeze
//     before they were named, the move and the mode and times set on the
//     moved file are made durable by the apply's flush before the file is
//     renamed into place, as a copy's are.
//
// The object then lives on as the base's file: a committed transaction's
// diff reads its new side from the base, or the originals store, where
// the object is gone (see Tx.patchFiles).
type mover struct {
	dir      *os.File // the objects directory
	uid, gid uint32

	mu     sync.Mutex
	adopts map[string]bool // by directory of the base

	moving sync.Mutex // held while an object is moved (moveNew)
}

// newMover returns a mover for the objects directory, or nil where moving
// cannot stand in for copying there.
func newMover(root *safefs.Root, objects string) *mover {
	dir, err := os.Open(objects)
	if err != nil {
		return nil
	}
	base, err := root.Lstat("")
	var st syscall.Stat_t
	if err != nil || syscall.Fstat(int(dir.Fd()), &st) != nil || uint64(st.Dev) != base.Dev || !safefs.NoInherited(dir) {
		dir.Close()
		return nil
	}
	return &mover{dir: dir, uid: uint32(os.Geteuid()), gid: uint32(os.Getegid()), adopts: map[string]bool{}}
}

func (m *mover) close() {
	if m != nil {
		m.dir.Close()
	}
}

// into reports whether a file moved into the base directory dir is what a
// file created there would be (asked of each directory once).
func (m *mover) into(root *safefs.Root, dir string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ok, seen := m.adopts[dir]
	if !seen {
		ok, _ = root.Adopts(dir)
		m.adopts[dir] = ok
	}
	return ok
}

// moveNew puts op i's new file under its temporary name by moving its
// frozen object there, sets its mode and times, and returns; where the
// object cannot be moved (it is not airlock's one-named file, or the file
// system refuses the move), its bytes are copied instead, as stageNew
// does. Nothing is fsync'd: the caller flushes the file system before the
// file is renamed into place.
func (m *mover) moveNew(root *safefs.Root, j *Journal, i int) error {
	op := &j.Ops[i]
	tmp := opName(j.TxID, i, op.Path)
	name := strings.TrimPrefix(op.After.Digest, manifest.DigestPrefix)
	shown := filepath.Join(root.Path(), op.Path)
	f, err := openObject(m.dir, name)
	if err != nil {
		return fmt.Errorf("read frozen content of %s: %w", op.Path, err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("read frozen content of %s: %w", op.Path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 1 || st.Uid != m.uid || st.Gid != m.gid {
		return writeTemp(root, tmp, op.Path, f, op.After, false)
	}
	// The bytes checked are the bytes applied: the object must still be
	// what was frozen, as a copy's digest is checked while it is made.
	d, err := hashOf(f)
	if err != nil {
		return fmt.Errorf("read frozen content of %s: %w", op.Path, err)
	}
	if d != op.After.Digest {
		return fmt.Errorf("write %s: content digest %s does not match the recorded %s; the transaction's state was altered", shown, d, op.After.Digest)
	}
	// One move at a time: a rename between two directories takes the
	// file system's rename lock, which goroutines would spin on.
	m.moving.Lock()
	err = root.MoveIn(m.dir, name, tmp)
	m.moving.Unlock()
	if errors.Is(err, errors.ErrUnsupported) {
		return writeTemp(root, tmp, op.Path, f, op.After, false)
	}
	if err != nil {
		return err
	}
	// What was moved must be what was hashed, with no other name: the
	// move takes whatever is at the object's name when it runs (a file
	// renamed over it after the hash), and a name made after the check
	// above would outlive the move, one more name of a base file. Once
	// moved, the file's only name is the base's: nothing in the state
	// reaches it any more.
	at, err := root.Lstat(tmp)
	var now syscall.Stat_t
	if err == nil {
		err = syscall.Fstat(int(f.Fd()), &now)
	}
	if err != nil || at.Dev != uint64(now.Dev) || at.Ino != now.Ino || at.Nlink != 1 || now.Nlink != 1 {
		return fmt.Errorf("write %s: the frozen content was replaced, or given another name, as it was moved into the base; the transaction's state was altered", shown)
	}
	// Set on the moved file through the descriptor, before the flush
	// that makes them durable with the move.
	if err := f.Chmod(op.After.Mode); err != nil {
		return fmt.Errorf("write %s: %w", shown, err)
	}
	if op.After.MtimeNs != 0 {
		if err := futimens(int(f.Fd()), op.After.MtimeNs); err != nil {
			return fmt.Errorf("write %s: set times: %w", shown, err)
		}
	}
	return nil
}

// openObject opens the object name of the objects directory dir
// read-only, not following a symlink there.
func openObject(dir *os.File, name string) (*os.File, error) {
	for {
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), nil
	}
}

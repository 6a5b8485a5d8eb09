package watchd

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// baseEvents is every change to a watched directory's entries and to the
// directory itself, and every open and close of a file in it: a file
// open for writing can change through a shared mapping with no event of
// its own until its last close.
const baseEvents = unix.IN_OPEN | unix.IN_CLOSE_WRITE | unix.IN_CLOSE_NOWRITE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// maxNamed bounds what a tree remembers: past it, the tree forgets and
// every token given before then is unknown.
const maxNamed = 1 << 20

// tree is one watched tree: a base (watched by the daemon itself, new
// directories included) or a held tree (a run's watch, handed over).
type tree struct {
	mu   sync.Mutex
	root string
	fd   int
	base bool
	seq  func() uint64 // the daemon's next sequence number

	dirs map[int32]string // watch descriptor -> directory, relative to root ("" the root)
	// named is the last sequence number at which an event touched each
	// path; trees, at which each subtree was made, moved or deleted.
	named, trees map[string]uint64
	// opens counts, per file of a base, opens less closes seen: a file
	// whose count is not zero may be open for writing.
	opens map[string]int
	// linked is every file of a base known to have a second name.
	linked map[string]bool
	// moving holds the open counts of renames whose old name was seen and
	// new name not yet (their events share a cookie).
	moving []move
	// from is the sequence number at which the watch was whole; broken,
	// when not zero, the one at which it stopped being exact. gone says
	// the root itself is gone.
	from, broken uint64
	gone         bool
	why          string
	// dev and ino name the root directory watched: a base whose path
	// names another directory now is another base.
	dev, ino uint64
	// mounts are the mount points beneath mountRoot (the base; a held
	// tree's state root) when the watch began.
	mountRoot string
	mounts    []string
	// closed says fd is closed (or about to be): nothing reads it again.
	closed bool
}

// newBase makes the watch of the base at root, with no directory watched
// yet: setup watches them, once a reader takes the events off the queue
// (a large base's setup makes more events than the queue holds).
func newBase(root string, seq func() uint64) (*tree, error) {
	if why := unwatchableFS(root); why != "" {
		return nil, errors.New(why)
	}
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", root, err)
	}
	// The mount points first, the watches after: a file system mounted
	// beneath the base in between is a change the next look sees.
	points, err := mountPoints()
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	mounts := beneath(points, root)
	for _, m := range mounts {
		if m != root {
			// A directory mounted inside the base, or a second path of
			// one of its directories (a bind mount): a watch names a
			// directory by one path, and would name a write through the
			// other under the wrong one.
			return nil, fmt.Errorf("a file system is mounted at %s, inside the base: the base is walked", m)
		}
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	return &tree{root: root, fd: fd, base: true, seq: seq, dirs: map[int32]string{},
		named: map[string]uint64{}, trees: map[string]uint64{}, opens: map[string]int{}, linked: map[string]bool{},
		dev: st.Dev, ino: st.Ino, mountRoot: root, mounts: mounts}, nil
}

// setup sets a watch on every directory of the base, beneath it and never
// through a symlink, and notes its files with a second name, while the
// reader goes on; the watch is whole from then on (t.from).
func (t *tree) setup() error {
	rfd, err := unix.Open(t.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", t.root, err)
	}
	defer unix.Close(rfd)
	var st unix.Stat_t
	if err := unix.Fstat(rfd, &st); err != nil || st.Dev != t.dev || st.Ino != t.ino {
		return fmt.Errorf("%s is another directory than the one measured", t.root)
	}
	if err := t.add(rfd, "", false); err != nil {
		return err
	}
	t.mu.Lock()
	t.from = t.seq()
	t.mu.Unlock()
	return nil
}

// held makes the tree of a run's watch handed over: fd is its inotify
// instance, dirs its watch descriptors' directories. Every event queued
// on it is since the watch began.
func held(root string, fd int, dirs map[int32]string, seq func() uint64) *tree {
	return &tree{root: root, fd: fd, seq: seq, dirs: dirs, named: map[string]uint64{}, trees: map[string]uint64{}}
}

// add watches the directory open at dfd, rel beneath the root, and
// every directory beneath it; t.mu is held. The watch is set on the very
// directory open (through its /proc/self/fd link), and the directories
// beneath are opened from it, never through a symlink: a directory
// swapped for a link while this runs is never watched in its place.
func (t *tree) add(dfd int, rel string, held bool) error {
	// The watch and its entry in the map are made under t.mu (held says
	// the caller holds it), so that the reader never sees an event of a
	// watch the map does not know.
	if !held {
		t.mu.Lock()
	}
	err := t.watchDir(dfd, rel)
	if !held {
		t.mu.Unlock()
	}
	if err != nil {
		return err
	}
	// The names are read after the watch is set: one made since is in the
	// listing, or its event comes, or both. The listing reads a duplicate
	// of dfd, which the caller closes.
	dup, err := unix.FcntlInt(uintptr(dfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("read %s: %w", t.abs(rel), err)
	}
	d := os.NewFile(uintptr(dup), t.abs(rel))
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", t.abs(rel), err)
	}
	for _, name := range names {
		child := join(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // gone since the listing: its event names it
			}
			return fmt.Errorf("lstat %s: %w", t.abs(child), err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if st.Nlink > 1 {
				if !held {
					t.mu.Lock()
				}
				t.linked[child] = true
				if !held {
					t.mu.Unlock()
				}
			}
		case unix.S_IFDIR:
			cfd, err := unix.Openat2(dfd, name, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
			if err != nil {
				if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
					continue // swapped or gone since: its parent's event names it
				}
				return fmt.Errorf("open %s: %w", t.abs(child), err)
			}
			err = t.add(cfd, child, held)
			unix.Close(cfd)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *tree) abs(rel string) string {
	if rel == "" {
		return t.root
	}
	return t.root + "/" + rel
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// drain reads every queued event; t.mu is held.
func (t *tree) drain() {
	if t.closed {
		t.breakAt("the watch was closed")
		return
	}
	var buf [64 << 10]byte
	for {
		n, err := unix.Read(t.fd, buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err != nil:
			t.breakAt(fmt.Sprintf("read the watch of %s: %v", t.root, err))
			return
		}
		t.parse(buf[:n])
	}
}

func (t *tree) parse(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			t.breakAt("a torn inotify event")
			return
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		b = b[end:]
		t.event(ev.Wd, ev.Mask, ev.Cookie, name)
	}
}

// breakAt marks the watch as no longer exact from now on.
func (t *tree) breakAt(why string) {
	if t.broken == 0 {
		t.broken, t.why = t.seq(), why
	}
}

func (t *tree) name(rel string) {
	if len(t.named) >= maxNamed {
		t.breakAt("too many paths changed to remember")
		return
	}
	t.named[rel] = t.seq()
}

// event records one event; t.mu is held.
func (t *tree) event(wd int32, mask, cookie uint32, name string) {
	switch {
	case mask&unix.IN_Q_OVERFLOW != 0:
		t.breakAt(fmt.Sprintf("the kernel's queue of events for %s overflowed (fs.inotify.max_queued_events)", t.root))
		return
	case mask&unix.IN_UNMOUNT != 0:
		t.breakAt(fmt.Sprintf("a file system under %s was unmounted", t.root))
		return
	}
	dir, ok := t.dirs[wd]
	if !ok {
		return // a watch removed (a directory moved or deleted): its parent's event named it
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(t.dirs, wd)
		if dir == "" {
			t.gone = true
			t.breakAt(fmt.Sprintf("%s is gone", t.root))
		}
		return
	}
	if name == "" {
		// The directory itself.
		switch {
		case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 && dir == "":
			if mask&unix.IN_DELETE_SELF != 0 || t.base {
				// A base moved is another path's; a held tree moves
				// into and out of its pool slot, its entries unchanged.
				t.gone = mask&unix.IN_DELETE_SELF != 0
				t.breakAt(fmt.Sprintf("%s was moved or deleted", t.root))
			}
		case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
			t.trees[dir] = t.seq()
		case mask&(unix.IN_OPEN|unix.IN_CLOSE_NOWRITE) != 0 && t.base:
			// A listing read: nothing changed.
		default:
			t.name(dir)
		}
		return
	}
	p := join(dir, name)
	isDir := mask&unix.IN_ISDIR != 0
	if t.base && !isDir {
		switch {
		case mask&unix.IN_OPEN != 0:
			t.opens[p]++
			t.settle(p)
			return
		case mask&unix.IN_CLOSE_NOWRITE != 0:
			t.opens[p]--
			t.settle(p)
			return
		case mask&unix.IN_CLOSE_WRITE != 0:
			t.opens[p]--
			t.settle(p)
		}
	}
	if t.base && isDir && mask&(unix.IN_OPEN|unix.IN_CLOSE_NOWRITE) != 0 {
		return // a listing read
	}
	if t.base && mask&(unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
		t.carryOpens(p, mask, cookie)
	}
	if mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
		// A change of the listing moves the directory's own times.
		t.name(dir)
		if isDir {
			t.trees[p] = t.seq()
			if t.base && mask&(unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
				// A directory renamed (or exchanged with another: both
				// ends of each come before the watches can be told
				// apart by path) leaves the watches' paths in doubt.
				t.breakAt(fmt.Sprintf("a directory was moved at %s", t.abs(p)))
				return
			}
			if t.base {
				t.rewatch(wd, p, mask)
			}
			return
		}
	}
	if t.base && mask&(unix.IN_ATTRIB|unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		t.checkLinked(wd, p, name, mask&unix.IN_ATTRIB == 0)
	}
	t.name(p)
}

// settle forgets a balanced count.
func (t *tree) settle(p string) {
	if t.opens[p] == 0 {
		delete(t.opens, p)
	}
}

// rewatch follows a directory of a base made, moved or deleted: a
// directory that left (or was deleted) is no longer watched under its old
// path, and one that came is watched with everything beneath it. Its
// subtree is named whole either way.
func (t *tree) rewatch(parentWd int32, p string, mask uint32) {
	if mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0 {
		for wd, d := range t.dirs {
			if d == p || strings.HasPrefix(d, p+"/") {
				unix.InotifyRmWatch(t.fd, uint32(wd))
				delete(t.dirs, wd)
			}
		}
		return
	}
	// Made or moved in: open it beneath its parent, as add does.
	pfd, err := t.openDir(t.dirs[parentWd])
	if err != nil {
		t.breakAt(err.Error())
		return
	}
	defer unix.Close(pfd)
	_, name := splitLast(p)
	cfd, err := unix.Openat2(pfd, name, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return // gone or swapped since: a later event names it
		}
		t.breakAt(fmt.Sprintf("open %s: %v", t.abs(p), err))
		return
	}
	defer unix.Close(cfd)
	if err := t.add(cfd, p, true); err != nil {
		t.breakAt(err.Error())
	}
}

// watchDir sets the watch of the directory open at dfd, rel beneath the
// root; t.mu is held.
func (t *tree) watchDir(dfd int, rel string) error {
	wd, err := unix.InotifyAddWatch(t.fd, "/proc/self/fd/"+strconv.Itoa(dfd), baseEvents|unix.IN_ONLYDIR|unix.IN_EXCL_UNLINK)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("watch %s: the user's inotify watch limit (fs.inotify.max_user_watches) is reached", t.abs(rel))
		}
		return fmt.Errorf("watch %s: %w", t.abs(rel), err)
	}
	if prev, dup := t.dirs[int32(wd)]; dup && prev != rel {
		// Two paths, one directory: events could not say which path
		// they are under.
		return fmt.Errorf("watch %s: it is the directory %s too", t.abs(rel), t.abs(prev))
	}
	t.dirs[int32(wd)] = rel
	return nil
}

// openDir opens the base's directory rel beneath the root, never through
// a symlink.
func (t *tree) openDir(rel string) (int, error) {
	rfd, err := unix.Open(t.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil || rel == "" {
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", t.root, err)
		}
		return rfd, nil
	}
	defer unix.Close(rfd)
	fd, err := unix.Openat2(rfd, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", t.abs(rel), err)
	}
	return fd, nil
}

// checkLinked notes a file of a base that has a second name now. A name
// that came (made or moved in: came) with more than one link is a second
// name of a file whose other names may lie in the base, unknown: the watch
// stops being exact, and the next token sets a new one, which finds them
// all.
func (t *tree) checkLinked(wd int32, p, name string, came bool) {
	pfd, err := t.openDir(t.dirs[wd])
	if err != nil {
		return // the directory is gone: its parent's event names it
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
		if came && !t.linked[p] {
			t.breakAt(fmt.Sprintf("%s came with a second name, which may lie in the base", t.abs(p)))
		}
		t.linked[p] = true
	}
}

// carryOpens moves the open counts of a file, or of every file beneath a
// directory, renamed within the base from its old name to its new one,
// so that a file open for writing stays named under whatever name it
// has; t.mu is held.
func (t *tree) carryOpens(p string, mask, cookie uint32) {
	if mask&unix.IN_MOVED_FROM != 0 {
		moved := map[string]int{}
		for q, n := range t.opens {
			if q == p || strings.HasPrefix(q, p+"/") {
				moved[q[len(p):]] = n
			}
		}
		t.moving = append(t.moving, move{cookie: cookie, opens: moved})
		return
	}
	came := false
	for i, m := range t.moving {
		if m.cookie != cookie {
			continue
		}
		for suffix, n := range m.opens {
			t.opens[p+suffix] += n
		}
		t.moving = append(t.moving[:i], t.moving[i+1:]...)
		came = true
		break
	}
	if !came {
		// Moved in from outside the base: whether it is open for
		// writing nobody here saw. It is named at every refresh, as a
		// file open is.
		t.opens[p]++
	}
	if len(t.moving) > 64 {
		t.moving = t.moving[1:] // moved out of the base, long ago
	}
}

func splitLast(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

type move struct {
	cookie uint32
	opens  map[string]int
}

// Changes is what a watch names since a point: the paths to measure
// again, and the subtrees to measure whole.
type Changes struct {
	Paths []string `json:"paths"`
	Trees []string `json:"trees"`
}

// moved reports whether the root's path names another directory than the
// one watched (the base, or a directory above it, was moved or replaced).
func (t *tree) moved() bool {
	var st unix.Stat_t
	return unix.Stat(t.root, &st) != nil || st.Dev != t.dev || st.Ino != t.ino
}

// since is what changed after sequence number from, or why that cannot
// be said; t.mu is held and the queue drained.
func (t *tree) since(from uint64) (*Changes, string) {
	switch {
	case t.base && t.moved():
		return nil, fmt.Sprintf("%s is another directory than the one watched", t.root)
	case t.broken != 0 && t.broken > from:
		return nil, t.why
	case from < t.from:
		return nil, "the watch began after that point"
	}
	c := &Changes{}
	for p, s := range t.named {
		if s > from || t.opens[p] != 0 || t.linked[p] {
			c.Paths = append(c.Paths, p)
		}
	}
	for p := range t.opens {
		if _, ok := t.named[p]; !ok {
			c.Paths = append(c.Paths, p)
		}
	}
	for p := range t.linked {
		if _, ok := t.named[p]; !ok && t.opens[p] == 0 {
			c.Paths = append(c.Paths, p)
		}
	}
	for p, s := range t.trees {
		if s > from {
			c.Trees = append(c.Trees, p)
		}
	}
	return c, ""
}

// remount marks the watch broken when the file systems mounted beneath
// its mount root are not those there when it began; t.mu is held.
func (t *tree) remount(points []string) {
	if t.mountRoot == "" {
		t.breakAt("the mount table changed")
		return
	}
	if !slices.Equal(beneath(points, t.mountRoot), t.mounts) {
		t.breakAt(fmt.Sprintf("a file system was mounted or unmounted beneath %s", t.mountRoot))
	}
}

// mountPoints lists the mount points of this mount namespace, sorted.
func mountPoints() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out = append(out, unescapeMount(f[4]))
	}
	slices.Sort(out)
	return out, nil
}

// beneath is the points at or below root.
func beneath(points []string, root string) []string {
	var out []string
	for _, p := range points {
		if p == root || strings.HasPrefix(p, root+"/") || root == "/" {
			out = append(out, p)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, and
// tab, newline and backslash likewise).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// unwatchableFS says why the file system of path can change without an
// event of this kernel's ("" where it cannot): only local file systems,
// which every write reaches through this kernel, are watched. A network or
// FUSE file system (NFS, SMB, 9p, virtiofs, sshfs) is written by others
// too, and an overlay by writes to its lower layers.
func unwatchableFS(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Sprintf("statfs %s: %v", path, err)
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC,
		0x2fc12fc1, // zfs
		0xca451a4e: // bcachefs
		return ""
	}
	return fmt.Sprintf("%s is on a file system (type %#x) that may change without an event here: it is walked", path, uint32(st.Type))
}

package watchd

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/manifest"
)

// The daemon is this binary started again with daemonArg0 as argv[0] and
// daemonEnv naming its directory; Main recognises it by both.
const (
	daemonArg0 = "airlock-watchd"
	daemonEnv  = "AIRLOCK_WATCHD"
	// readyFD is where the daemon finds the pipe on which it says it is
	// listening: ExtraFiles[0].
	readyFD = 3

	sockName  = "sock"
	pidName   = "pid"
	lockName  = "daemon.lock"
	spawnName = "spawn.lock"

	// maxHeld bounds the held trees: each is an inotify instance of the
	// user's (fs.inotify.max_user_instances, 128 by default).
	maxHeld = 32
	// baseIdle is how long a base watch no held tree refers to is kept
	// after its last token: long enough for the next run of an agent's
	// loop, short enough not to pin watches nobody asks about.
	baseIdle = 3 * time.Minute
	// emptyIdle is how long the daemon waits, holding nothing, before it
	// exits.
	emptyIdle = 5 * time.Second
	// maxSpent bounds the keys remembered as handed over.
	maxSpent = 4096
	// unasked is how long the daemon waits for a question before it
	// exits, whatever it holds: pooled trees can wait for days, and a
	// process of airlock's should not outlive its use by as long (their
	// next refresh walks).
	unasked = time.Hour
)

var mainCalled atomic.Bool

// Main must be called first in main, after launch.Init. In a normal start
// it only records that this binary can be started as the daemon; started
// as the daemon, it serves until it holds nothing, and exits.
func Main() {
	mainCalled.Store(true)
	dir := os.Getenv(daemonEnv)
	if dir == "" {
		return
	}
	os.Unsetenv(daemonEnv)
	if len(os.Args) == 0 || os.Args[0] != daemonArg0 {
		return
	}
	ready := os.NewFile(readyFD, "ready")
	err := serve(dir, ready)
	if err != nil {
		fmt.Fprintf(ready, "error %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type server struct {
	dir      string
	instance string
	seq      atomic.Uint64

	mu    sync.Mutex
	bases map[string]*baseWatch
	held  map[string]*heldTree
	// spent is every key handed over before: a key handed twice is one
	// nobody can vouch for.
	spent map[string]bool
	empty time.Time // when the daemon last started holding nothing
	asked time.Time // when it last took a question

	mountNS string // the daemon's own mount namespace (see request.MountNS)

	mountMu sync.Mutex
	// mountinfo is polled for changes of the mount table (mountsChanged):
	// a raw descriptor, never in Go's poller, whose own polls would take
	// the change before this one sees it.
	mountinfo int
}

type baseWatch struct {
	t       *tree
	f       *os.File // t.fd, in Go's poller
	lastUse time.Time
	refs    int // held trees of this base
}

type heldTree struct {
	t    *tree
	f    *os.File
	base string
}

func (s *server) next() uint64 { return s.seq.Add(1) }

// serve runs the daemon of dir. It returns nil when another daemon holds
// dir already, or once it has held nothing for a while.
func serve(dir string, ready *os.File) error {
	os.Chdir("/")
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		ready.Close()
		return nil // another daemon serves dir
	}
	// Who serves: a client that gets no answer in time ends it (evict).
	os.WriteFile(filepath.Join(dir, pidName), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	var id [8]byte
	rand.Read(id[:])
	s := &server{dir: dir, instance: hex.EncodeToString(id[:]), bases: map[string]*baseWatch{}, held: map[string]*heldTree{},
		spent: map[string]bool{}, empty: time.Now(), asked: time.Now(), mountinfo: -1, mountNS: mountNS()}
	l, err := listen(dir)
	if err != nil {
		return err
	}
	defer l.Close()
	s.mountsChanged() // opened before any watch is set
	go s.accept(l)
	fmt.Fprintln(ready, "ready")
	ready.Close()
	for range time.Tick(time.Second) {
		if s.idle() {
			// Gone before the lock is: a client that finds no socket
			// starts the next daemon, which waits for the lock.
			l.Close()
			return nil
		}
	}
	return nil
}

// listen binds the socket in dir. The path goes through a descriptor of
// dir, so that a deep state root does not exceed a socket path's 108
// bytes.
func listen(dir string) (*net.UnixListener, error) {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	p := "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + sockName
	unix.Unlinkat(dfd, sockName, 0)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", filepath.Join(dir, sockName), err)
	}
	l.SetUnlinkOnClose(false)
	return l, nil
}

// idle drops what is no longer needed, and reports whether the daemon
// should exit: it holds nothing and has not for a while, or its state
// root is gone.
func (s *server) idle() bool {
	if _, err := os.Stat(s.dir); err != nil {
		return true
	}
	s.mountsChanged()
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.asked) > unasked {
		return true
	}
	for key, h := range s.held {
		h.t.mu.Lock()
		gone := h.t.gone
		h.t.mu.Unlock()
		if gone {
			s.dropHeld(key)
		}
	}
	for root, b := range s.bases {
		b.t.mu.Lock()
		gone := b.t.gone
		b.t.mu.Unlock()
		if gone || (b.refs == 0 && time.Since(b.lastUse) > baseIdle) {
			shut(b.t, b.f)
			delete(s.bases, root)
		}
	}
	if len(s.held) > 0 || len(s.bases) > 0 {
		s.empty = time.Now()
		return false
	}
	return time.Since(s.empty) > emptyIdle
}

// mountsChanged asks whether the mount table changed since it was last
// asked, and where it did, marks broken every watch beneath which a file
// system was mounted or unmounted since the watch began: one mounted over
// part of a watched tree shows entries no watch covers. (A mount over a
// directory above a base is seen by the base's identity: tree.moved.) It
// is asked before every answer, so that a mount made before a question is
// seen by its answer: the kernel counts the change before mount(2)
// returns.
func (s *server) mountsChanged() {
	s.mountMu.Lock()
	defer s.mountMu.Unlock()
	if s.mountinfo < 0 {
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			s.breakAll("the mount table cannot be watched: " + err.Error())
			return
		}
		s.mountinfo = fd // its first poll reports no change: the watches began after it
		return
	}
	fds := []unix.PollFd{{Fd: int32(s.mountinfo), Events: unix.POLLPRI}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			s.breakAll("the mount table cannot be watched: " + err.Error())
			return
		}
		if fds[0].Revents&(unix.POLLPRI|unix.POLLERR) == 0 {
			return
		}
		points, err := mountPoints()
		if err != nil {
			s.breakAll("the mount table changed and cannot be read: " + err.Error())
			return
		}
		s.eachTree(func(t *tree) { t.remount(points) })
		return
	}
}

func (s *server) breakAll(why string) {
	s.eachTree(func(t *tree) { t.breakAt(why) })
}

// eachTree calls f on every tree the daemon holds, each under its lock.
func (s *server) eachTree(f func(*tree)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bases {
		b.t.mu.Lock()
		f(b.t)
		b.t.mu.Unlock()
	}
	for _, h := range s.held {
		h.t.mu.Lock()
		f(h.t)
		h.t.mu.Unlock()
	}
}

// read takes t's events off its queue as they come, so that a busy tree
// does not overflow it, until f is closed.
func read(t *tree, f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(uintptr) bool {
		t.mu.Lock()
		t.drain()
		t.mu.Unlock()
		return false // wait for the next event
	})
}

// shut closes a tree's watch: marked closed first, so that no reader
// takes a number the kernel may give to another descriptor.
func shut(t *tree, f *os.File) {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	f.Close()
}

// poll wraps t's descriptor for Go's poller and starts its reader.
func poll(t *tree) *os.File {
	f := os.NewFile(uintptr(t.fd), "inotify")
	go read(t, f)
	return f
}

func (s *server) accept(l *net.UnixListener) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go s.serveConn(c)
	}
}

// request is one call, and reply its answer, as JSON on the socket; a
// hold's descriptor comes with it (SCM_RIGHTS).
// Paths travel as manifest.Bytes: a name that is not UTF-8 is one JSON
// would otherwise mangle.
type request struct {
	Op string `json:"op"` // "token", "since", "hold", "take"
	// MountNS is the caller's mount namespace: a path names the same
	// file for the daemon only in its own.
	MountNS string         `json:"mount_ns"`
	Base    manifest.Bytes `json:"base,omitempty"`
	Token   string         `json:"token,omitempty"`
	Key     string         `json:"key,omitempty"`
	Root    manifest.Bytes `json:"root,omitempty"`
	Dirs    []byte         `json:"dirs,omitempty"` // dirsToWire
	// Back asks a take for the held watch itself (Client.Take).
	Back bool `json:"back,omitempty"`
}

type reply struct {
	Token   string       `json:"token,omitempty"`
	Changes *wireChanges `json:"changes,omitempty"`
	// Unknown says why what changed cannot be said: the caller walks.
	Unknown string `json:"unknown,omitempty"`
	Error   string `json:"error,omitempty"`
	// Dirs are the watch descriptors' directories of a watch given back
	// by a take, whose descriptor comes with the reply.
	Dirs []byte `json:"dirs,omitempty"`
}

type wireChanges struct {
	Paths []manifest.Bytes `json:"paths"`
	Trees []manifest.Bytes `json:"trees"`
}

// dirsToWire writes a watch's directories as one run of bytes: each watch
// descriptor in decimal and its directory, each ended by a NUL (which no
// path holds). A thousand directories are one field to decode (base64 in
// the JSON), not a thousand map entries.
func dirsToWire(dirs map[int32]string) []byte {
	var b []byte
	for wd, d := range dirs {
		b = strconv.AppendInt(b, int64(wd), 10)
		b = append(b, 0)
		b = append(b, d...)
		b = append(b, 0)
	}
	return b
}

// dirsFromWire reads what dirsToWire wrote.
func dirsFromWire(w []byte) (map[int32]string, error) {
	s := string(w)
	dirs := map[int32]string{}
	for s != "" {
		n, rest, ok := cut(s, 0)
		if !ok {
			return nil, errors.New("a malformed list of watched directories")
		}
		d, rest, ok := cut(rest, 0)
		if !ok {
			return nil, errors.New("a malformed list of watched directories")
		}
		wd, err := strconv.ParseInt(n, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("a malformed list of watched directories: %w", err)
		}
		if _, dup := dirs[int32(wd)]; dup {
			return nil, fmt.Errorf("watch descriptor %d is listed twice", wd)
		}
		dirs[int32(wd)] = d
		s = rest
	}
	if len(dirs) == 0 {
		return nil, errors.New("no watched directory is listed")
	}
	return dirs, nil
}

func toWire(c *Changes) *wireChanges {
	w := &wireChanges{Paths: make([]manifest.Bytes, len(c.Paths)), Trees: make([]manifest.Bytes, len(c.Trees))}
	for i, p := range c.Paths {
		w.Paths[i] = manifest.Bytes(p)
	}
	for i, p := range c.Trees {
		w.Trees[i] = manifest.Bytes(p)
	}
	return w
}

func fromWire(w *wireChanges) *Changes {
	c := &Changes{Paths: make([]string, len(w.Paths)), Trees: make([]string, len(w.Trees))}
	for i, p := range w.Paths {
		c.Paths[i] = string(p)
	}
	for i, p := range w.Trees {
		c.Trees[i] = string(p)
	}
	return c
}

func (s *server) serveConn(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if !samePeer(c) {
		return
	}
	req, fds, err := readRequest(c)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var rep reply
	pass, after := -1, func() {}
	switch {
	case err != nil:
		rep.Error = err.Error()
	case req.MountNS != s.mountNS:
		// Another namespace may show another file at the same path (a
		// mount over part of the base that only one of them has).
		rep.Unknown = "the caller is in another mount namespace than the daemon"
	default:
		s.mu.Lock()
		s.asked = time.Now()
		s.mu.Unlock()
		s.mountsChanged()
		rep, pass, after = s.handle(req, &fds)
	}
	data, err := json.Marshal(rep)
	if err == nil {
		var oob []byte
		if pass >= 0 {
			oob = unix.UnixRights(pass)
		}
		send(c, append(data, '\n'), oob)
	}
	// A watch given back is closed here once sent: the caller has its own
	// descriptor of it.
	after()
}

// samePeer reports whether the process at the other end is of this
// daemon's own user.
func samePeer(c *net.UnixConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	rc.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	return err == nil && cred != nil && int(cred.Uid) == os.Geteuid()
}

func readRequest(c *net.UnixConn) (request, []int, error) {
	var req request
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return req, nil, err
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return req, nil, err
		}
		for _, m := range msgs {
			rights, err := unix.ParseUnixRights(&m)
			if err == nil {
				fds = append(fds, rights...)
			}
		}
	}
	rest, err := io.ReadAll(c)
	if err != nil {
		return req, fds, err
	}
	data := append(buf[:n], rest...)
	if err := json.Unmarshal(data, &req); err != nil {
		return req, fds, fmt.Errorf("a malformed request: %w", err)
	}
	return req, fds, nil
}

// handle answers req. A take that gives its watch back returns the
// descriptor to pass with the reply, and what to do once it is sent.
func (s *server) handle(req request, fds *[]int) (reply, int, func()) {
	none := func() {}
	switch req.Op {
	case "token":
		return s.token(string(req.Base)), -1, none
	case "since":
		return s.since(string(req.Base), req.Token), -1, none
	case "hold":
		if len(*fds) != 1 {
			return reply{Error: "hold: one descriptor must come with it"}, -1, none
		}
		fd := (*fds)[0]
		*fds = nil
		return s.hold(req, fd), -1, none
	case "take":
		return s.take(req.Key, req.Back)
	}
	return reply{Error: fmt.Sprintf("unknown request %q", req.Op)}, -1, none
}

func (s *server) token(base string) reply {
	if !filepath.IsAbs(base) || filepath.Clean(base) != base {
		return reply{Error: fmt.Sprintf("token: %q is not a clean absolute path", base)}
	}
	for range 2 {
		s.mu.Lock()
		b := s.bases[base]
		s.mu.Unlock()
		if b == nil || b.stale() {
			var err error
			if b, err = s.rebuild(base); err != nil {
				return reply{Unknown: err.Error()}
			}
		}
		// The token is drawn under the tree's lock, after the last look
		// at it: a break after the look gets a later number than the
		// token, which since then sees.
		b.t.mu.Lock()
		b.t.drain()
		if b.t.broken != 0 || b.t.moved() {
			b.t.mu.Unlock()
			continue // it broke meanwhile: a new one
		}
		// A token is a point after every event of a system call that
		// returned before it was asked for: the kernel queues an event as
		// the call makes its change.
		tok := s.next()
		b.t.mu.Unlock()
		s.mu.Lock()
		b.lastUse = time.Now()
		s.mu.Unlock()
		return reply{Token: s.instance + ":" + strconv.FormatUint(tok, 10)}
	}
	return reply{Unknown: fmt.Sprintf("the watch of %s broke as it was set", base)}
}

// stale reports whether the base watch can no longer vouch for anything.
func (b *baseWatch) stale() bool {
	b.t.mu.Lock()
	defer b.t.mu.Unlock()
	b.t.drain()
	return b.t.broken != 0 || b.t.moved()
}

// rebuild sets a new watch of base in place of the one it has, if any.
// What the old one knew of files open and files with a second name still
// holds, and carries over: a writer it counted is not forgotten by the new
// one, which did not see it open.
func (s *server) rebuild(base string) (*baseWatch, error) {
	// Set outside the lock: a large base takes a while, and other calls
	// need not wait for it.
	t, err := newBase(base, s.next)
	if err != nil {
		return nil, err
	}
	nb := &baseWatch{t: t}
	nb.f = poll(t)
	if err := t.setup(); err != nil {
		shut(t, nb.f)
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.bases[base]; old != nil {
		old.t.mu.Lock()
		t.mu.Lock()
		for p, n := range old.t.opens {
			t.opens[p] += n
		}
		for p := range old.t.linked {
			t.linked[p] = true
		}
		t.mu.Unlock()
		old.t.mu.Unlock()
		nb.refs = old.refs
		shut(old.t, old.f)
	}
	s.bases[base] = nb
	return nb, nil
}

func (s *server) since(base, token string) reply {
	from, ok := s.parseToken(token)
	if !ok {
		return reply{Unknown: "the token is another daemon's (it was restarted since)"}
	}
	s.mu.Lock()
	b := s.bases[base]
	if b != nil {
		b.lastUse = time.Now()
	}
	s.mu.Unlock()
	if b == nil {
		return reply{Unknown: "the base is not watched (any more)"}
	}
	b.t.mu.Lock()
	defer b.t.mu.Unlock()
	b.t.drain()
	c, why := b.t.since(from)
	if c == nil {
		return reply{Unknown: why}
	}
	// A new token at this answer's point, under the lock that covered
	// the drain (as token draws one): what changes after the answer, the
	// next since from it names.
	rep := reply{Changes: toWire(c)}
	if b.t.broken == 0 {
		rep.Token = s.instance + ":" + strconv.FormatUint(s.next(), 10)
	}
	return rep
}

func (s *server) parseToken(token string) (uint64, bool) {
	inst, n, ok := cut(token, ':')
	if !ok || inst != s.instance {
		return 0, false
	}
	v, err := strconv.ParseUint(n, 10, 64)
	return v, err == nil
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func (s *server) hold(req request, fd int) reply {
	if req.Key == "" || len(req.Dirs) == 0 || !filepath.IsAbs(string(req.Root)) {
		unix.Close(fd)
		return reply{Error: "hold: a key, a root and the watch's directories are needed"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spent[req.Key] {
		unix.Close(fd)
		s.dropHeld(req.Key) // handed twice: neither is to be trusted
		return reply{Error: "hold: that key was handed over before"}
	}
	if len(s.spent) >= maxSpent {
		// A key replayed after its tree was taken names no pooled tree
		// any more: only the held ones need remembering.
		clear(s.spent)
		for k := range s.held {
			s.spent[k] = true
		}
	}
	s.spent[req.Key] = true
	if len(s.held) >= maxHeld {
		unix.Close(fd)
		return reply{Unknown: fmt.Sprintf("hold: %d trees are held already", maxHeld)}
	}
	if why := unwatchableFS(string(req.Root)); why != "" {
		unix.Close(fd)
		return reply{Unknown: why}
	}
	// The descriptor must be an inotify instance: anything else would
	// never report an event.
	if !isInotify(fd) {
		unix.Close(fd)
		return reply{Error: "hold: the descriptor is not an inotify instance"}
	}
	unix.SetNonblock(fd, true)
	dirs, err := dirsFromWire(req.Dirs)
	if err != nil {
		unix.Close(fd)
		return reply{Error: "hold: " + err.Error()}
	}
	t := held(string(req.Root), fd, dirs, s.next)
	// A held tree moves about the state root (into its pool slot, into
	// the next transaction): what is mounted beneath the state root is
	// what it must not change.
	if points, err := mountPoints(); err == nil {
		t.mountRoot = filepath.Dir(s.dir)
		t.mounts = beneath(points, t.mountRoot)
	} else {
		t.breakAt("the mount table cannot be read: " + err.Error())
	}
	h := &heldTree{t: t, base: string(req.Base)}
	h.f = poll(t)
	s.held[req.Key] = h
	if b := s.bases[string(req.Base)]; b != nil {
		b.refs++
	}
	return reply{}
}

// isInotify reports whether fd is an inotify instance.
func isInotify(fd int) bool {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && link == "anon_inode:inotify"
}

// take ends the hold of the tree held under key and names what touched
// it. With back, a watch that is whole is given back (its descriptor and
// directories): the daemon reads nothing from it after the drain that the
// answer covers, so every later event is the caller's to read.
func (s *server) take(key string, back bool) (reply, int, func()) {
	s.mu.Lock()
	h := s.held[key]
	if h != nil {
		delete(s.held, key)
		if b := s.bases[h.base]; b != nil {
			b.refs--
			b.lastUse = time.Now()
		}
	}
	s.mu.Unlock()
	if h == nil {
		return reply{Unknown: "the pooled tree's watch is not held (the daemon was restarted, or it was handed over twice)"}, -1, func() {}
	}
	t := h.t
	t.mu.Lock()
	t.drain()
	c, why := t.since(0)
	// Closed under the lock that covered the drain: the reader takes no
	// event off the queue after it.
	t.closed = true
	var rep reply
	pass := -1
	if c == nil {
		rep.Unknown = why
	} else {
		rep.Changes = toWire(c)
		if back && t.broken == 0 && !t.gone {
			rep.Dirs = dirsToWire(t.dirs)
			pass = t.fd
		}
	}
	t.mu.Unlock()
	return rep, pass, func() { h.f.Close() }
}

// dropHeld forgets a held tree; s.mu is held.
func (s *server) dropHeld(key string) {
	h := s.held[key]
	if h == nil {
		return
	}
	delete(s.held, key)
	shut(h.t, h.f)
	if b := s.bases[h.base]; b != nil {
		b.refs--
	}
}

// mountNS names this process's mount namespace ("?" where it cannot be
// read).
func mountNS() string {
	ns, err := os.Readlink("/proc/thread-self/ns/mnt")
	if err != nil {
		return "?"
	}
	return ns
}

package watchd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/manifest"
)

// Dir is the daemon's directory in a state root: its socket and locks.
// A run's command is kept from it (launch.Spec.Hidden).
const Dir = "watchd"

// Client asks the daemon of one state root.
type Client struct{ dir string }

// New is the client of the daemon of the state root stateDir.
func New(stateDir string) *Client { return &Client{dir: filepath.Join(stateDir, Dir)} }

// Dir is the daemon's directory.
func (c *Client) Dir() string { return c.dir }

// How long a client waits for an answer: a token's may set the first
// watch of a base (a walk of it), every other one is a look at what the
// daemon holds. A run whose daemon does not answer walks, and is slower
// by these at most.
const (
	tokenTimeout  = 5 * time.Second
	answerTimeout = 2 * time.Second
)

// ErrUnknown is wrapped by an answer that cannot say what changed: the
// caller walks.
var ErrUnknown = errors.New("the watch cannot say what changed")

// Available reports whether this binary can start the daemon (Main was
// called first in main).
func Available() bool { return mainCalled.Load() }

// Running reports whether a daemon answers now.
func (c *Client) Running() bool {
	conn, err := c.dial()
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// Token watches base (starting the daemon where none answers) and returns
// a token for this moment: Since(base, token) later names what changed
// after it. Take the token before measuring the base.
func (c *Client) Token(base string) (string, error) {
	rep, err := c.call(request{Op: "token", Base: manifest.Bytes(base)}, -1, true, tokenTimeout)
	if err != nil {
		return "", err
	}
	if rep.Unknown != "" {
		return "", fmt.Errorf("%w: %s", ErrUnknown, rep.Unknown)
	}
	return rep.Token, nil
}

// Since names what changed in base after token, and returns a new token
// drawn at the moment of its answer ("" where the daemon could not draw
// one): Since(base, renewed) later names what changed after this answer.
func (c *Client) Since(base, token string) (*Changes, string, error) {
	rep, err := c.call(request{Op: "since", Base: manifest.Bytes(base), Token: token}, -1, false, answerTimeout)
	if err != nil {
		return nil, "", err
	}
	if rep.Changes == nil {
		return nil, "", fmt.Errorf("%w: %s", ErrUnknown, rep.Unknown)
	}
	return fromWire(rep.Changes), rep.Token, nil
}

// Hold hands the daemon a run's watch of the tree at root (fd, an inotify
// instance, and its watch descriptors' directories) under key, for Take
// to ask later; base is the tree's base. fd stays the caller's to close.
func (c *Client) Hold(key, base, root string, fd int, dirs map[int32]string) error {
	rep, err := c.call(request{Op: "hold", Key: key, Base: manifest.Bytes(base), Root: manifest.Bytes(root), Dirs: dirsToWire(dirs)}, fd, false, answerTimeout)
	if err != nil {
		return err
	}
	if rep.Unknown != "" {
		return fmt.Errorf("%w: %s", ErrUnknown, rep.Unknown)
	}
	return nil
}

// Take names every path of the tree held under key that changed since
// its watch began, and ends the daemon's hold of it. With back, the watch
// itself comes back too where it is whole (Kept, nil where it is not): it
// has watched the tree from its first run's open, and goes on from where
// the daemon stopped reading, for a run to read as its own
// (watch.Resume).
func (c *Client) Take(key string, back bool) (*Changes, *Kept, error) {
	rep, fd, err := c.callFD(request{Op: "take", Key: key, Back: back}, -1, false, answerTimeout)
	if err != nil {
		return nil, nil, err
	}
	if rep.Changes == nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, nil, fmt.Errorf("%w: %s", ErrUnknown, rep.Unknown)
	}
	var kept *Kept
	if fd >= 0 {
		if dirs, err := dirsFromWire(rep.Dirs); back && err == nil && isInotify(fd) {
			kept = &Kept{FD: fd, Dirs: dirs}
		} else {
			unix.Close(fd)
		}
	}
	return fromWire(rep.Changes), kept, nil
}

// Kept is a held tree's watch given back by Take: its inotify instance,
// the caller's to close, and the directory (relative to the tree's root)
// of each of its watch descriptors.
type Kept struct {
	FD   int
	Dirs map[int32]string
}

// call sends one request (with fd, when not -1) and reads its reply. start
// says a missing daemon is started.
func (c *Client) call(req request, fd int, start bool, timeout time.Duration) (reply, error) {
	rep, got, err := c.callFD(req, fd, start, timeout)
	if got >= 0 {
		unix.Close(got) // not asked for
	}
	return rep, err
}

// callFD is call, returning the descriptor that came with the reply, or
// -1.
func (c *Client) callFD(req request, fd int, start bool, timeout time.Duration) (rep reply, got int, err error) {
	got = -1
	conn, err := c.dial()
	if err != nil && start {
		conn, err = c.start()
	}
	if err != nil {
		return rep, -1, fmt.Errorf("%w: no daemon answers at %s: %v", ErrUnknown, c.dir, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	req.MountNS = mountNS()
	data, err := json.Marshal(req)
	if err != nil {
		return rep, -1, err
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	if err := send(conn, data, oob); err != nil {
		return rep, -1, fmt.Errorf("%w: ask the daemon at %s: %v", ErrUnknown, c.dir, err)
	}
	conn.CloseWrite()
	body, got, err := readReply(conn)
	if err == nil {
		err = json.Unmarshal(body, &rep)
	}
	if err != nil {
		if got >= 0 {
			unix.Close(got)
		}
		if req.Op != "token" {
			// It takes a connection and does not answer a question that
			// needs no work (stopped, stuck): end it, so that the next
			// run starts another rather than wait for it too. A token
			// may legitimately take long (the first watch of a large
			// base): its answer is waited for less, and its daemon kept.
			c.evict()
		}
		return rep, -1, fmt.Errorf("%w: the daemon at %s did not answer: %v", ErrUnknown, c.dir, err)
	}
	if rep.Error != "" {
		if got >= 0 {
			unix.Close(got)
		}
		return rep, -1, fmt.Errorf("%w: the daemon at %s: %s", ErrUnknown, c.dir, rep.Error)
	}
	return rep, got, nil
}

// send writes data, with oob on its first bytes. One sendmsg on a stream
// socket writes what the socket's buffer takes, and no more: a large
// request or reply (the directories of a tree with thousands of them)
// goes on in writes of its own.
func send(conn *net.UnixConn, data, oob []byte) error {
	n, _, err := conn.WriteMsgUnix(data, oob, nil)
	if err != nil || n == len(data) {
		return err
	}
	_, err = conn.Write(data[n:])
	return err
}

// readReply reads a reply to its end, and the descriptor that came with
// its first bytes, if any (-1).
func readReply(conn *net.UnixConn) ([]byte, int, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	got := -1
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				fds, _ := unix.ParseUnixRights(&m)
				for _, f := range fds {
					if got < 0 {
						got = f
					} else {
						unix.Close(f)
					}
				}
			}
		}
	}
	if err != nil {
		return nil, got, err
	}
	rest, err := io.ReadAll(conn)
	return append(buf[:n], rest...), got, err
}

// dial connects to the socket, through a descriptor of the directory (see
// listen).
func (c *Client) dial() (*net.UnixConn, error) {
	dfd, err := unix.Open(c.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + sockName, Net: "unix"})
}

// start starts the daemon, one starter at a time, and connects to it.
func (c *Client) start() (*net.UnixConn, error) {
	if !mainCalled.Load() {
		return nil, errors.New("this program cannot start the daemon (watchd.Main is not called in its main)")
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(c.dir, spawnName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, err
	}
	// Another starter may have been first.
	if conn, err := c.dial(); err == nil {
		return conn, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{daemonArg0}
	cmd.Env = append(os.Environ(), daemonEnv+"="+c.dir)
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{w}
	// Its own session: a terminal's signals to this process's group do
	// not reach it, and it outlives this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, err
	}
	// Reaped by whoever inherits it; this process does not wait.
	cmd.Process.Release()
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, _ := bufio.NewReader(r).ReadString('\n')
	if msg, isErr := strings.CutPrefix(line, "error "); isErr {
		return nil, errors.New(strings.TrimSpace(msg))
	}
	// "ready", or nothing: another daemon held the lock and this one
	// left. Either way one should answer now.
	return c.dial()
}

// evict ends the daemon that did not answer: the process its pid file
// names, if it is that very daemon (started as the daemon, of this
// directory), and removes its socket, so that the next client starts
// another.
func (c *Client) evict() {
	b, err := os.ReadFile(filepath.Join(c.dir, pidName))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	proc := "/proc/" + strconv.Itoa(pid)
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil || string(cmdline) != daemonArg0+"\x00" {
		return
	}
	env, err := os.ReadFile(proc + "/environ")
	if err != nil || !strings.Contains("\x00"+string(env), "\x00"+daemonEnv+"="+c.dir+"\x00") {
		return
	}
	unix.Kill(pid, unix.SIGKILL)
	os.Remove(filepath.Join(c.dir, sockName))
}

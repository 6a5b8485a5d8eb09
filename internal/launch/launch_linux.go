package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The helper is this binary re-executed with helperArg0 as argv[0] and
// helperEnv set; Init recognises it by both, so a marker leaked into some
// unrelated environment is not enough to hijack a normal start.
const (
	helperArg0 = "airlock-launch-helper"
	// errFD is where the helper finds the write end of the error pipe:
	// ExtraFiles[0].
	errFD = 3

	modeRun   = "run"
	modeProbe = "probe"
	// modeGuard proves the terminal guard (see probeGuard).
	modeGuard = "guard"

	// Records on the error pipe. The helper writes msgExec just before
	// execve; a successful execve closes the pipe, a failed one is
	// followed by "\x00errno\x00text". Setup and chdir failures are
	// "kind\x00errno\x00text". An empty pipe means the helper died before
	// reaching execve.
	msgExec  = "exec"
	msgSetup = "setup"
	msgChdir = "chdir"
	// msgContain is a setup failure of the PID namespace alone (its /proc
	// could not be mounted): the caller tries the next way.
	msgContain = "contain"
	// msgGuard is a failure to install the terminal guard
	// (seccomp_linux.go): the command must not start without it.
	msgGuard = "guard"
	// msgStarted, a line of its own, is what an init writes once the
	// command is running (the pipe stays open: see initMain).
	msgStarted = "started"
)

var initCalled atomic.Bool

// Init must be the first call in main. In a normal start it only records
// that the binary can act as its own same-path helper. Started as that
// helper (in a fresh mount namespace), it bind-mounts the staged tree over
// the base, changes to the start directory and replaces itself with the
// command; it never returns.
func Init() {
	initCalled.Store(true)
	if os.Getenv(helperEnv) == "" {
		return
	}
	if len(os.Args) == 0 || os.Args[0] != helperArg0 {
		os.Unsetenv(helperEnv)
		return
	}
	// Capabilities are each thread's own. In a user namespace every
	// thread of the helper holds the CAP_SYS_ADMIN it mounts with, and
	// dropAmbientCaps can take it back from one thread only: the mounts,
	// the drop and the fork or exec of the command must all happen on
	// that thread, or the command starts from a thread that still holds
	// it and can unmount the staged tree from over the base. Never
	// unlocked: the helper ends by exec or exit.
	runtime.LockOSThread()
	helperMain()
}

// helperMain runs in the new mount namespace, before the command exists.
func helperMain() {
	// The command must neither see the marker nor inherit the pipe: a
	// successful execve closing the pipe is how the parent learns of it.
	os.Unsetenv(helperEnv)
	unix.CloseOnExec(errFD)
	a := os.Args
	if len(a) < 14 || a[13] != "--" {
		fmt.Fprintln(os.Stderr, "airlock: same-path helper: malformed arguments (is this binary's launch.Init call out of date?)")
		os.Exit(125)
	}
	mode, staged, base, dir, argv := a[1], a[2], a[3], a[4], a[14:]
	refuseLinks := a[12] == "links:refuse"
	readOnly, writable, hidden := a[9], splitList(a[10]), splitList(a[11])
	fsType, source, data := a[5], a[6], a[7]
	grace, pidNS := strings.CutPrefix(a[8], "pid:")
	var caught <-chan (<-chan os.Signal)
	if pidNS {
		unix.CloseOnExec(ctlFD)
		if ms, err := strconv.ParseInt(grace, 10, 64); err == nil {
			leftoverGrace = time.Duration(ms) * time.Millisecond
		}
		// The init's signals are caught beside the setup below, which
		// does not depend on them (see catchSignals).
		c := make(chan (<-chan os.Signal), 1)
		go func() { c <- catchSignals() }()
		caught = c
	}

	// Private first, so that the mounts below cannot propagate back to the
	// host's mount table through a shared parent mount.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		helperFail(msgSetup, err, "make mounts private in the new namespace: "+err.Error())
	}
	if pidNS {
		// The command's /proc shows its own namespace: its processes'
		// numbers as getpid() gives them, and no one else's.
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			helperFail(msgContain, err, "mount /proc in a PID namespace of its own: "+err.Error())
		}
	}
	// The staged workspace's own mount comes before the bind, while base
	// still names the real base (an overlay's lower layer).
	if fsType != "" {
		if err := unix.Mount(source, staged, fsType, 0, data); err != nil {
			helperFail(msgSetup, err, fmt.Sprintf("mount %s at %s: %v", fsType, staged, mountErr(err)))
		}
	}
	if base != "" {
		if err := unix.Mount(staged, base, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			helperFail(msgSetup, err, fmt.Sprintf("bind-mount %s over %s: %v", staged, base, err))
		}
	}
	if readOnly != "" {
		if err := readOnlyExcept(readOnly, writable, hidden); err != nil {
			helperFail(msgSetup, err, err.Error())
		}
	}
	if err := dropAmbientCaps(); err != nil {
		helperFail(msgSetup, err, "drop the helper's capabilities: "+err.Error())
	}
	if mode == modeProbe {
		// A probe's arguments name entries to replace by an empty
		// directory, which proves the mount takes writes of every kind
		// (a deletion, a directory over a deleted one).
		for _, name := range argv {
			p := filepath.Join(staged, name)
			if err := os.RemoveAll(p); err != nil {
				helperFail(msgSetup, err, "write to the probe mount: "+err.Error())
			}
			if err := os.Mkdir(p, 0o700); err != nil {
				helperFail(msgSetup, err, "write to the probe mount: "+err.Error())
			}
		}
		os.Exit(0)
	}
	if mode == modeGuard {
		probeGuard()
	}
	root := base
	if root == "" {
		root = staged
	}
	cwd := filepath.Join(root, dir)
	if err := unix.Chdir(cwd); err != nil {
		helperFail(msgChdir, err, fmt.Sprintf("start directory %s in the staged workspace: %v", cwd, err))
	}
	if len(argv) == 0 {
		helperFail(msgExec, syscall.ENOENT, "no command")
	}
	env := os.Environ()
	prog, errno := lookPath(argv[0], envPath(env), cwd)
	// Last before the command starts, so that nothing the helper still
	// does runs under it: the command gets the filter with the exec, or
	// with the fork of the init of its PID namespace.
	helperGuard(refuseLinks)
	if pidNS {
		initMain(prog, errno, argv, env, caught)
	}
	helperWrite(msgExec)
	if errno == 0 {
		errno = toErrno(unix.Exec(prog, argv, env))
	}
	helperWrite("\x00" + strconv.Itoa(int(errno)) + "\x00" + errno.Error())
	os.Exit(127)
}

// mountErr says what a failed mount's errno means for a mount made in a
// user namespace, where the kernel gives few reasons.
func mountErr(err error) string {
	switch err {
	case unix.ENODEV:
		return "the kernel has no such file system"
	case unix.EPERM, unix.EACCES:
		return err.Error() + " (the kernel does not allow this mount in an unprivileged user namespace; overlayfs needs Linux 5.11 or later)"
	case unix.EINVAL:
		return err.Error() + " (the kernel refused the options; overlayfs in a user namespace needs Linux 5.11 or later, and the state directory's file system must take user.* extended attributes)"
	}
	return err.Error()
}

// readOnlyExcept makes dir read-only in this mount namespace, all of it
// but keep (directories beneath it), which stay as they were, and shows
// each of hide empty. Each kept directory is bound onto itself first, so
// the recursive bind of dir carries it as a mount of its own that the
// read-only remount of dir's top mount leaves alone. Mounts already inside
// dir (an overlay at the staged path) are carried the same way. The
// remount keeps the flags the mount already has (nosuid, nodev, noexec,
// atime): in a user namespace those are locked, and a remount that drops
// one is refused. Made before the capabilities are dropped, and inherited
// by a namespace the command could make itself, these mounts are locked
// there: the command cannot unmount or remount them.
func readOnlyExcept(dir string, keep, hide []string) error {
	for _, k := range keep {
		if err := unix.Mount(k, k, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s onto itself, to keep it writable in a read-only %s: %v", k, dir, err)
		}
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s onto itself, to show it read-only: %v", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("read the mount flags of %s: %v", dir, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for _, f := range [][2]int64{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&f[0] != 0 {
			flags |= uintptr(f[1])
		}
	}
	if err := unix.Mount("", dir, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %v", dir, err)
	}
	for _, h := range hide {
		if _, err := os.Lstat(h); err != nil {
			continue // nothing there to hide, nor can the command make it
		}
		if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0500"); err != nil {
			return fmt.Errorf("hide %s: %v", h, err)
		}
	}
	return nil
}

// splitList is the helper's argument for a list of paths: one per line
// ("" is none). Paths with a newline are refused by Run beforehand.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// dropAmbientCaps takes back the capabilities that a helper in a user
// namespace was given to mount with, so the command runs with the user's
// own powers: ambient capabilities survive execve, inheritable ones can be
// picked up by a file with file capabilities.
func dropAmbientCaps() error {
	err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	if errors.Is(err, unix.EINVAL) {
		return nil // a kernel without ambient capabilities gave none
	}
	if err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	return unix.Capset(&hdr, &data[0])
}

func helperFail(kind string, err error, text string) {
	helperWrite(kind + "\x00" + strconv.Itoa(int(toErrno(err))) + "\x00" + text)
	os.Exit(125)
}

func helperWrite(s string) {
	// Small writes to a pipe are atomic; nothing useful can be done if
	// the parent is gone.
	_, _ = unix.Write(errFD, []byte(s))
}

// helper is a started same-path helper.
type helper struct {
	cmd  *exec.Cmd
	errR *os.File
	// ctlW, for a helper that is its PID namespace's init, is how signals
	// reach it (see initMain); nil otherwise.
	ctlW *os.File
	how  string
	// pidNS says the helper is the init of a PID namespace of its own.
	pidNS bool
	// attempt is the index, in the attempts startHelper was given, of the
	// way its namespaces were had.
	attempt int
}

// nsAttempt is one way of getting a mount namespace.
type nsAttempt struct {
	how   string
	pidNS bool
	attr  func() *syscall.SysProcAttr
}

// nsAttempts lists the ways of getting the helper's namespaces, best
// first: with contain, each way with a PID namespace of its own first, and
// then (only where the helper has mounts to make) the same ways without.
func nsAttempts(mount, contain, needNS bool) []nsAttempt {
	uid, gid := os.Getuid(), os.Getgid()
	var out []nsAttempt
	if os.Geteuid() == 0 {
		out = append(out, nsAttempt{"mount namespace", false, func() *syscall.SysProcAttr {
			return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
		}})
	}
	caps := []uintptr{unix.CAP_SYS_ADMIN}
	if mount {
		// overlayfs does its own work (the work directory, copy-up) with
		// the powers its mounter had, and will not mount without
		// CAP_DAC_OVERRIDE. In a user namespace that reaches only the
		// user's own files, and the command never has it.
		caps = append(caps, unix.CAP_DAC_OVERRIDE)
	}
	// The user maps to itself, so files keep their owner and what the
	// command creates belongs to the user.
	out = append(out, nsAttempt{"user and mount namespace", false, func() *syscall.SysProcAttr {
		return &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			// A non-root user keeps no capabilities across execve, not even
			// in its own user namespace; the helper needs CAP_SYS_ADMIN
			// there to mount, and drops it before the command runs.
			AmbientCaps: caps,
		}
	}})
	if !contain {
		return out
	}
	var pid []nsAttempt
	for _, at := range out {
		at := at
		pid = append(pid, nsAttempt{strings.TrimSuffix(at.how, " namespace") + " and PID namespace", true, func() *syscall.SysProcAttr {
			a := at.attr()
			a.Cloneflags |= syscall.CLONE_NEWPID
			// The namespace, and every process in it, ends with airlock:
			// a supervisor that kills airlock leaves nothing behind.
			a.Pdeathsig = syscall.SIGKILL
			return a
		}})
	}
	if !needNS {
		return pid
	}
	return append(pid, out...)
}

// helperJob is what the helper does in its namespace: mount Mount (if
// any) at Staged, bind Staged over Base (if not ""), and in modeRun exec
// Argv in Dir, relative to Base (or Staged when Base is ""). In a PID
// namespace of its own it mounts a /proc that shows that namespace, and
// instead of exec'ing the command it starts it and stays its init.
type helperJob struct {
	mode, staged, base, dir string
	mount                   *Mount
	// readOnly, writable and hidden: see Spec.ReadOnly.
	readOnly         string
	writable, hidden []string
	// refuseLinks: see Spec.Watched.
	refuseLinks bool
	argv        []string
}

func (j helperJob) args(pidNS bool) []string {
	m := j.mount
	if m == nil {
		m = &Mount{}
	}
	pid := ""
	if pidNS {
		// The grace travels with the job: the init is another process.
		pid = "pid:" + strconv.FormatInt(leftoverGrace.Milliseconds(), 10)
	}
	links := "links:keep"
	if j.refuseLinks {
		links = "links:refuse"
	}
	return append([]string{helperArg0, j.mode, j.staged, j.base, j.dir, m.FSType, m.Source, m.Data, pid, j.readOnly, strings.Join(j.writable, "\n"), strings.Join(j.hidden, "\n"), links, "--"}, j.argv...)
}

// startHelper starts the helper in the first of attempts that can be had;
// group makes it (and so the command it becomes or starts) the leader of a
// process group of its own. A non-empty fallback says why none could be
// had; err is any other failure.
func startHelper(ctx context.Context, job helperJob, attempts []nsAttempt, group bool, env []string, stdin io.Reader, stdout, stderr io.Writer) (h *helper, fallback string, err error) {
	var whyNot []string
	for i, at := range attempts {
		errR, errW, err := os.Pipe()
		if err != nil {
			return nil, "", fmt.Errorf("same-path helper: %w", err)
		}
		extra := []*os.File{errW}
		var ctlR, ctlW *os.File
		if at.pidNS {
			if ctlR, ctlW, err = os.Pipe(); err != nil {
				errR.Close()
				errW.Close()
				return nil, "", fmt.Errorf("same-path helper: %w", err)
			}
			extra = append(extra, ctlR)
		}
		cmd := exec.CommandContext(ctx, "/proc/self/exe")
		cmd.Args = job.args(at.pidNS)
		cmd.Env = append(env, helperEnv+"=1")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		cmd.ExtraFiles = extra
		cmd.SysProcAttr = at.attr()
		cmd.SysProcAttr.Setpgid = group
		h := &helper{cmd: cmd, errR: errR, ctlW: ctlW, how: at.how, pidNS: at.pidNS, attempt: i}
		cmd.Cancel = func() error { return h.signal(group, syscall.SIGTERM) }
		cmd.WaitDelay = killGrace
		err = cmd.Start()
		errW.Close()
		if ctlR != nil {
			ctlR.Close()
		}
		if err == nil {
			return h, "", nil
		}
		errR.Close()
		if ctlW != nil {
			ctlW.Close()
		}
		whyNot = append(whyNot, at.how+": "+err.Error())
	}
	return nil, "cannot create a private mount namespace (" + strings.Join(whyNot, "; ") + ")", nil
}

// signal passes s on to the command: through the init of its PID
// namespace, which signals the command (and its group, with group), or
// straight to the helper that became the command.
func (h *helper) signal(group bool, s syscall.Signal) error {
	if h.pidNS {
		_, err := h.ctlW.Write([]byte{byte(s)})
		return err
	}
	return signalCommand(h.cmd.Process, group, s)
}

// helperReport is what the helper said on the error pipe.
type helperReport struct {
	kind  string // "" (died before execve), msgExec, msgSetup, msgChdir, msgContain
	errno syscall.Errno
	text  string // empty for a successful execve
	// attempt is the index of the way the helper's namespaces were had.
	attempt int
}

func parseReport(b []byte) helperReport {
	parts := strings.SplitN(string(b), "\x00", 3)
	r := helperReport{kind: parts[0]}
	if len(parts) == 3 {
		n, _ := strconv.Atoi(parts[1])
		r.errno, r.text = syscall.Errno(n), parts[2]
	}
	return r
}

// runSamePath runs the command through the helper: in a mount namespace
// for same-path mode or a Mount, and in a PID namespace of its own for
// Contain. A non-empty fallback says why the helper could not do what was
// asked and the caller should run the command directly (never for a
// Mount, which has no such fallback: see Run).
func runSamePath(ctx context.Context, spec Spec, fw *forwarder) (res Result, fallback string, err error) {
	if !initCalled.Load() {
		return Result{}, reasonNoInit, nil
	}
	for _, p := range append(append([]string{spec.ReadOnly}, spec.Writable...), spec.Hidden...) {
		if strings.Contains(p, "\n") {
			return Result{ExitCode: -1}, "", fmt.Errorf("the path %q holds a newline, which the namespace's helper cannot be given: move airlock's state (AIRLOCK_STATE_DIR) to a path without one", p)
		}
	}
	job := helperJob{mode: modeRun, staged: spec.Staged, base: spec.Base, dir: spec.relDir(), mount: spec.Mount,
		readOnly: spec.ReadOnly, writable: spec.Writable, hidden: spec.Hidden, refuseLinks: spec.Watched, argv: spec.Argv}
	if !spec.SamePath {
		// Only the mount (or the PID namespace) is wanted.
		job.base = ""
	}
	needNS := spec.SamePath || spec.Mount != nil
	attempts := nsAttempts(spec.Mount != nil, spec.Contain, needNS)
	var uncontained []string
	for {
		res, rep, err := runHelper(ctx, spec, job, attempts, fw)
		used := rep.attempt
		switch {
		case err != nil:
			return res, "", err
		case rep.kind == msgContain && used+1 < len(attempts):
			// This way of containing the command failed inside the
			// namespace (/proc could not be mounted there): try the
			// next.
			uncontained = append(uncontained, rep.text)
			attempts = attempts[used+1:]
			continue
		case rep.kind == msgContain:
			return Result{}, "no PID namespace could be had: " + rep.text, nil
		case rep.kind == msgSetup && spec.Mount != nil:
			return Result{}, "it could not be had: " + rep.text, nil
		case rep.kind == msgSetup && job.base != "" && spec.Contain && attempts[used].pidNS:
			// The bind over the base failed, the namespace did not: keep
			// the command contained, at the staged path.
			job.base = ""
			fallback = "same path unavailable: " + rep.text
			continue
		case rep.kind == msgSetup:
			return Result{}, "same path unavailable: " + rep.text, nil
		case rep.kind == "fallback":
			return Result{}, rep.text, nil
		}
		if fallback != "" {
			res.Fallback = fallback
		}
		if spec.Contain && !res.Contained && len(uncontained) > 0 {
			res.Uncontained = strings.Join(uncontained, "; ")
		}
		return res, "", nil
	}
}

// runHelper starts the helper once and reports how the command ended, or
// (in rep) why the helper could not start it: a setup failure the caller
// may answer by trying again another way. rep.kind "fallback" means no
// namespace could be had at all.
func runHelper(ctx context.Context, spec Spec, job helperJob, attempts []nsAttempt, fw *forwarder) (Result, helperReport, error) {
	name := spec.Argv[0]
	root := job.base
	if root == "" {
		root = spec.Staged
	}
	cwd := filepath.Join(root, spec.relDir())
	env := commandEnv(spec.Env, cwd)

	stdin, held, err := holdStdin(name, spec.Stdin)
	if err != nil {
		return Result{ExitCode: -1}, helperReport{}, err
	}
	h, fallback, err := startHelper(ctx, job, attempts, fw.group, env, stdin, spec.Stdout, spec.Stderr)
	// Only the child may hold the read end, or the copy would block on a
	// full pipe instead of failing once the command exits.
	held.closeRead()
	if fallback != "" || err != nil {
		held.closeWrite()
		return Result{ExitCode: -1}, helperReport{kind: "fallback", text: fallback}, err
	}
	defer func() {
		if h.ctlW != nil {
			h.ctlW.Close()
		}
	}()
	fw.attach(&target{pid: h.cmd.Process.Pid, send: func(s syscall.Signal) error { return h.signal(fw.group, s) }})
	br := bufio.NewReader(h.errR)
	started, rep, readErr := readStart(h, br)
	if started || (rep.kind == msgExec && rep.text == "" && readErr == nil) {
		held.release()
		res, err := waitCommand(ctx, spec, job, h, br, started, fw)
		return res, rep, err
	}
	h.errR.Close()
	held.closeWrite()
	werr := h.cmd.Wait()
	fw.detach()
	res, err := notStarted(ctx, name, job, h, rep, readErr, werr)
	return res, rep, err
}

// heldStdin is a stdin that is not a file, held back until the command
// itself runs: exec.Cmd would start copying it into the helper at once,
// and if the helper then falls back, that input would be lost. A nil
// heldStdin holds nothing.
type heldStdin struct {
	r, w *os.File
	src  io.Reader
}

// holdStdin returns what the helper gets as stdin: in itself when it is a
// file (or nil), else the read end of a pipe that heldStdin fills once
// released.
func holdStdin(name string, in io.Reader) (io.Reader, *heldStdin, error) {
	if _, isFile := in.(*os.File); in == nil || isFile {
		return in, nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: stdin pipe: %w", name, err)
	}
	return r, &heldStdin{r: r, w: w, src: in}, nil
}

func (s *heldStdin) closeRead() {
	if s != nil {
		s.r.Close()
	}
}

func (s *heldStdin) closeWrite() {
	if s != nil {
		s.w.Close()
	}
}

// release starts copying the held input to the command.
func (s *heldStdin) release() {
	if s != nil {
		go func() {
			_, _ = io.Copy(s.w, s.src)
			s.w.Close()
		}()
	}
}

// readStart reads the helper's first word: that the command started in
// its PID namespace, or, from a helper that is no init, its whole report
// (which an execve that succeeded leaves empty).
func readStart(h *helper, br *bufio.Reader) (started bool, rep helperReport, readErr error) {
	first, readErr := br.ReadString('\n')
	started = h.pidNS && first == msgStarted+"\n"
	var msg []byte
	if !started {
		var rest []byte
		if readErr == nil {
			rest, readErr = io.ReadAll(br)
		} else if readErr == io.EOF {
			readErr = nil
		}
		msg = append([]byte(first), rest...)
	}
	rep = parseReport(msg)
	rep.attempt = h.attempt
	return started, rep, readErr
}

// waitCommand waits for a command that is running and reports how it
// ended: from the init's last word when it runs contained (started), from
// the helper's own exit otherwise.
func waitCommand(ctx context.Context, spec Spec, job helperJob, h *helper, br *bufio.Reader, started bool, fw *forwarder) (Result, error) {
	name := spec.Argv[0]
	var end initEnd
	var endErr error
	if started {
		end, endErr = readInitEnd(br)
	}
	h.errR.Close()
	werr := wait(h.cmd, spec.EndGroup && !started)
	fw.detach()
	if !started {
		res, err := waitResult(ctx, name, h.cmd.ProcessState, werr)
		res.SamePath = job.base != ""
		return res, err
	}
	if endErr != nil {
		// The init died without saying how the command ended (killed
		// from outside): the namespace, and the command, went with it.
		if werr == nil {
			werr = endErr
		}
		return Result{ExitCode: -1}, fmt.Errorf("wait for %s: its exit could not be observed: %w", name, werr)
	}
	res, err := statusResult(ctx, name, end.state)
	res.SamePath = job.base != ""
	res.Contained = true
	res.Ended = end.left
	return res, err
}

// notStarted says why the helper, which has exited (werr), did not start
// the command: its report, or the signal that ended it before execve.
func notStarted(ctx context.Context, name string, job helperJob, h *helper, rep helperReport, readErr, werr error) (Result, error) {
	switch {
	case readErr != nil:
		return Result{ExitCode: -1}, fmt.Errorf("run %s: read the same-path helper's report: %w", name, readErr)
	case rep.kind == msgSetup, rep.kind == msgContain:
		return Result{}, nil
	case rep.kind == msgChdir, rep.kind == msgGuard:
		return Result{ExitCode: -1}, fmt.Errorf("run %s: %s", name, rep.text)
	case rep.kind == msgExec:
		ee := execError(name, rep.errno)
		return Result{ExitCode: ee.ExitCode(), SamePath: job.base != ""}, ee
	}
	// The helper died before execve. A signal we forwarded does that, and
	// then the command was interrupted before it began.
	ps := h.cmd.ProcessState
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res, err := waitResult(ctx, name, ps, werr)
			res.SamePath = job.base != ""
			return res, err
		}
	}
	if werr == nil {
		werr = errors.New("exited without a report")
	}
	return Result{ExitCode: -1}, fmt.Errorf("run %s: the same-path helper failed before starting it: %w", name, werr)
}

const reasonNoInit = "this binary does not call launch.Init, so it cannot act as its own mount helper"

// SamePathSupport reports whether same-path mode works here, by mounting
// in a throw-away namespace; reason says how, or why not.
func SamePathSupport() (ok bool, reason string) {
	if !initCalled.Load() {
		return false, reasonNoInit
	}
	d, err := os.MkdirTemp("", "airlock-probe-")
	if err != nil {
		return false, "probe directory: " + err.Error()
	}
	defer os.Remove(d)
	how, err := probe(helperJob{mode: modeProbe, staged: d, base: d}, nsAttempts(false, false, true))
	if err != nil {
		return false, err.Error()
	}
	return true, "bind mounts in a private " + how
}

// ContainSupport reports whether a command can be contained here (see
// Spec.Contain), by starting a helper in a PID namespace of its own and
// mounting its /proc; reason says how, or why not.
func ContainSupport() (ok bool, reason string) {
	if !initCalled.Load() {
		return false, reasonNoInit
	}
	d, err := os.MkdirTemp("", "airlock-probe-")
	if err != nil {
		return false, "probe directory: " + err.Error()
	}
	defer os.Remove(d)
	how, err := probe(helperJob{mode: modeProbe, staged: d}, nsAttempts(false, true, false))
	if err != nil {
		return false, err.Error()
	}
	return true, "a private " + how
}

// probe runs the helper in probe mode in the first of attempts that works
// and says which, or why none did.
func probe(job helperJob, attempts []nsAttempt) (how string, err error) {
	var whyNot []string
	for len(attempts) > 0 {
		h, fallback, err := startHelper(context.Background(), job, attempts, false, os.Environ(), nil, nil, nil)
		if fallback != "" {
			return "", errors.New(fallback)
		}
		if err != nil {
			return "", err
		}
		msg, _ := io.ReadAll(h.errR)
		h.errR.Close()
		if h.ctlW != nil {
			h.ctlW.Close()
		}
		werr := h.cmd.Wait()
		switch rep := parseReport(msg); {
		case rep.kind == msgContain:
			whyNot = append(whyNot, h.how+": "+rep.text)
			for len(attempts) > 0 && attempts[0].how != h.how {
				attempts = attempts[1:]
			}
			attempts = attempts[1:]
			continue
		case rep.kind == msgSetup:
			return "", errors.New(rep.text)
		case werr != nil:
			return "", fmt.Errorf("mount helper: %w", werr)
		}
		return h.how, nil
	}
	return "", errors.New(strings.Join(whyNot, "; "))
}

// TryMount mounts m at dir in a throw-away user and mount namespace, as
// Run would for a Spec with a Mount, and then replaces each entry named in
// replace (relative to dir) by an empty directory: only a real mount that
// took real writes proves the kernel allows it. It fails saying why not.
func TryMount(m Mount, dir string, replace []string) error {
	if !initCalled.Load() {
		return errors.New(reasonNoInit)
	}
	ats := nsAttempts(true, false, true)
	_, err := probe(helperJob{mode: modeProbe, staged: dir, mount: &m, argv: replace}, ats[len(ats)-1:])
	return err
}

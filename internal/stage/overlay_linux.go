package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// overlayBackend mounts an overlay file system at the staged path: the base
// is the read-only lower layer, and an upper and a work directory in the
// transaction's state take every write. Staging costs one mount whatever
// the tree's size, and the diff reads the upper directory alone.
//
// Its isolation is read-committed, not snapshot: a path the command has not
// written reads through to the live base, so the command can see edits made
// to the base after open (overlayfs itself leaves it undefined whether and
// when such edits show). What the command writes never reaches the base
// before commit. auto never picks it.
//
// Without root the overlay is hosted (Request.Hosted): Stage makes the
// layers and an empty mount point, and the command's own user and mount
// namespace mounts the overlay there (HostedMount), so the mount lives
// exactly as long as the command and whatever it left running. The
// kernel then keeps its marks in user.overlay.* extended attributes
// instead of trusted.overlay.*; Changes reads both.
type overlayBackend struct{}

func (overlayBackend) Name() string { return Overlay }

// Layout of an overlay transaction: the staged path is the mount point; the
// layers live beside it.
const (
	layersSuffix = ".overlay"
	upperName    = "upper"
	workName     = "work"
	// openedName is a file made just before the mount: its ctime is the
	// moment of open on the file system's own clock, against which the
	// diff tells base paths that changed since open.
	openedName = "opened"
	// hostedName marks the layers of a hosted overlay: nothing of it is
	// ever mounted in airlock's own namespace.
	hostedName = "hosted"

	// overlayfs marks opaque directories and copied-up entries with these
	// attributes as root (trusted.*) and in a user namespace, mounted with
	// userxattr (user.*).
	xattrOpaque     = "trusted.overlay.opaque"
	xattrOrigin     = "trusted.overlay.origin"
	xattrUserOpaque = "user.overlay.opaque"
	xattrUserOrigin = "user.overlay.origin"
	// Every overlay file system reports this type.
	overlayMagic = unix.OVERLAYFS_SUPER_MAGIC
)

func layersDir(dir string) string { return filepath.Clean(dir) + layersSuffix }

var probeCache sync.Map // state dir → probeResult

type probeResult struct {
	ok     bool
	reason string
}

// Supported makes the cheap checks (root, a kernel with overlayfs) that
// every open can afford; ProbeOverlay mounts a throw-away overlay to prove
// the rest. An open that passes these but cannot mount fails saying why.
func (overlayBackend) Supported(string) (bool, string) {
	if os.Geteuid() != 0 {
		return false, notRoot
	}
	if b, err := os.ReadFile("/proc/filesystems"); err == nil && !strings.Contains(string(b), "\toverlay\n") {
		if _, err := os.Stat("/sys/module/overlay"); err != nil {
			return false, "the kernel has no overlayfs (not in /proc/filesystems and no overlay module loaded)"
		}
	}
	return true, "overlayfs, as root"
}

const notRoot = "overlay needs root for open: without root the overlay can be mounted only in the namespace of a command run in it, and open has no command to host that namespace (the mount must outlive `airlock open`); use `airlock run --backend overlay -- COMMAND`, or --backend copy or reflink"

// SupportedHosted makes the cheap checks for a hosted overlay: a kernel
// that mounts overlayfs in an unprivileged user namespace (Linux 5.11 or
// later) and user namespaces that an unprivileged user may create.
// ProbeHosted proves the rest with a real mount.
func (overlayBackend) SupportedHosted(string) (bool, string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false, "cannot read the kernel version: " + err.Error()
	}
	release := unix.ByteSliceToString(u.Release[:])
	if !kernelAtLeast(release, 5, 11) {
		return false, "Linux " + release + " cannot mount overlayfs in an unprivileged user namespace (that needs 5.11 or later); run as root, or use --backend copy or reflink"
	}
	if why := userNSBlocked(); why != "" {
		return false, why + "; use --backend copy or reflink"
	}
	if b, err := os.ReadFile("/proc/filesystems"); err == nil && !strings.Contains(string(b), "\toverlay\n") {
		if _, err := os.Stat("/sys/module/overlay"); err != nil {
			return false, "the kernel has no overlayfs (not in /proc/filesystems and no overlay module loaded)"
		}
	}
	return true, "overlayfs mounted in the command's own user namespace (Linux " + release + ")"
}

// kernelAtLeast reports whether a kernel release ("6.8.0-45-generic")
// is major.minor or later. A release that does not parse is not.
func kernelAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(release, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// userNSBlocked says which system setting keeps an unprivileged user
// from creating a user namespace with the powers to mount, or "".
func userNSBlocked() string {
	knobs := []struct{ path, blocked, why string }{
		{"/proc/sys/kernel/unprivileged_userns_clone", "0", "unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0)"},
		{"/proc/sys/user/max_user_namespaces", "0", "user namespaces are off (user.max_user_namespaces = 0)"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor takes the mount capability from unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)"},
	}
	for _, k := range knobs {
		if b, err := os.ReadFile(k.path); err == nil && strings.TrimSpace(string(b)) == k.blocked {
			return k.why
		}
	}
	return ""
}

// HostedMount says how the command's namespace mounts the hosted overlay
// staged at dir over base: the file system type and its options. ok is
// false when dir is not a hosted overlay.
func HostedMount(base, dir string) (fsType, data string, ok bool) {
	dir = filepath.Clean(dir)
	if !isHosted(dir) {
		return "", "", false
	}
	layers := layersDir(dir)
	return "overlay", hostedOpts(filepath.Clean(base), filepath.Join(layers, upperName), filepath.Join(layers, workName)), true
}

// hostedOpts are mountOverlay's options for a mount in a user namespace:
// userxattr keeps the marks in user.* attributes, which an unprivileged
// mount may write, and rules out redirect_dir=off (which follows
// redirects); nofollow neither makes nor follows them, so a renamed
// directory is still copied whole and the upper layer alone says what
// changed.
func hostedOpts(lower, upper, work string) string {
	return "lowerdir=" + escapeOpt(lower) + ",upperdir=" + escapeOpt(upper) + ",workdir=" + escapeOpt(work) +
		",userxattr,redirect_dir=nofollow,metacopy=off,index=off"
}

func isHosted(dir string) bool {
	_, err := os.Lstat(filepath.Join(layersDir(dir), hostedName))
	return err == nil
}

// ProbeHosted proves a hosted overlay works here with its upper layer in
// stateDir: try mounts one in a throw-away user namespace (as the command's
// namespace would) and replaces a base directory by an empty one through
// it, and the upper layer must then hold the whiteout and the opaque mark
// that Changes reads. The result is kept for the life of the process.
func ProbeHosted(stateDir string, try func(fsType, data, dir string, replace []string) error) (bool, string) {
	key := "hosted\x00" + stateDir
	if r, ok := probeCache.Load(key); ok {
		p := r.(probeResult)
		return p.ok, p.reason
	}
	ok, reason := overlayBackend{}.SupportedHosted(stateDir)
	if ok {
		ok, reason = probeHosted(stateDir, try, reason)
	}
	probeCache.Store(key, probeResult{ok, reason})
	return ok, reason
}

func probeHosted(stateDir string, try func(fsType, data, dir string, replace []string) error, how string) (bool, string) {
	d, err := os.MkdirTemp(stateDir, ".overlay-probe-")
	if err != nil {
		return false, fmt.Sprintf("cannot probe in %s: %v", stateDir, unwrapPath(err))
	}
	defer removeTree(context.Background(), d)
	for _, n := range []string{"lower", "lower/d", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(d, n), 0o700); err != nil {
			return false, fmt.Sprintf("cannot probe in %s: %v", stateDir, unwrapPath(err))
		}
	}
	if err := os.WriteFile(filepath.Join(d, "lower", "d", "f"), nil, 0o600); err != nil {
		return false, fmt.Sprintf("cannot probe in %s: %v", stateDir, unwrapPath(err))
	}
	up := func(n string) string { return filepath.Join(d, "upper", n) }
	opts := hostedOpts(filepath.Join(d, "lower"), up(""), filepath.Join(d, "work"))
	if err := try("overlay", opts, filepath.Join(d, "merged"), []string{"d"}); err != nil {
		return false, "overlayfs in an unprivileged user namespace: " + err.Error()
	}
	if !isOpaque(up("d")) {
		return false, "overlayfs in a user namespace left no opaque mark on a replaced directory in " + stateDir
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(up("d"), "f"), &st); err == nil {
		return false, "overlayfs in a user namespace left an entry in a replaced directory in " + stateDir
	}
	return true, how + ", probed in " + stateDir
}

// ProbeOverlay mounts a throw-away overlay in the state directory: only a
// real mount proves the kernel, the privileges and the state file system
// (which must hold the upper layer's whiteouts and xattrs) all allow it.
// The result is kept for the life of the process.
func ProbeOverlay(stateDir string) (bool, string) {
	if r, ok := probeCache.Load(stateDir); ok {
		p := r.(probeResult)
		return p.ok, p.reason
	}
	ok, reason := probeOverlay(stateDir)
	probeCache.Store(stateDir, probeResult{ok, reason})
	return ok, reason
}

func probeOverlay(stateDir string) (bool, string) {
	if os.Geteuid() != 0 {
		return false, notRoot
	}
	d, err := os.MkdirTemp(stateDir, ".overlay-probe-")
	if err != nil {
		return false, fmt.Sprintf("cannot probe in %s: %v", stateDir, unwrapPath(err))
	}
	defer removeTree(context.Background(), d)
	for _, n := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(d, n), 0o700); err != nil {
			return false, fmt.Sprintf("cannot probe in %s: %v", stateDir, unwrapPath(err))
		}
	}
	merged := filepath.Join(d, "merged")
	if err := mountOverlay(filepath.Join(d, "lower"), filepath.Join(d, "upper"), filepath.Join(d, "work"), merged); err != nil {
		return false, err.Error()
	}
	// A whiteout proves the upper layer's file system can hold one.
	if err := os.WriteFile(filepath.Join(d, "lower", "f"), nil, 0o600); err == nil {
		os.Remove(filepath.Join(merged, "f"))
	}
	if err := unmountAll(merged); err != nil {
		return false, err.Error()
	}
	return true, "overlayfs mounts with the upper layer in " + stateDir
}

// mountOverlay mounts lower+upper at merged. redirect_dir, metacopy and
// index stay off, so that the upper directory alone says what changed:
// a renamed directory is copied (rename gives EXDEV and tools fall back),
// and a chmod'ed file is copied up whole, never as metadata only.
func mountOverlay(lower, upper, work, merged string) error {
	opts := "lowerdir=" + escapeOpt(lower) + ",upperdir=" + escapeOpt(upper) + ",workdir=" + escapeOpt(work) +
		",redirect_dir=off,metacopy=off,index=off"
	for {
		err := unix.Mount("overlay", merged, "overlay", 0, opts)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.ENODEV:
			return fmt.Errorf("mount overlay at %s: the kernel has no overlayfs (is the overlay module available?)", quote(merged))
		case unix.EPERM:
			return fmt.Errorf("mount overlay at %s: not permitted (needs CAP_SYS_ADMIN)", quote(merged))
		}
		return fmt.Errorf("mount overlay at %s: %w (the state directory's file system may not support an overlay upper layer)", quote(merged), err)
	}
}

// escapeOpt escapes the characters the overlay option parser splits on.
func escapeOpt(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`)
	return r.Replace(p)
}

// unmountAll unmounts everything mounted at dir, waiting for nothing: a
// mount a process still works in is detached, and goes when it leaves.
func unmountAll(dir string) error {
	for range 16 {
		err := unix.Unmount(dir, 0)
		switch err {
		case nil, unix.EINTR:
			continue
		case unix.EBUSY:
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
				return fmt.Errorf("unmount %s: %w", quote(dir), err)
			}
			continue
		case unix.EINVAL, unix.ENOENT:
			return nil // not a mount point (any more)
		}
		return fmt.Errorf("unmount %s: %w", quote(dir), err)
	}
	return fmt.Errorf("unmount %s: still mounted after 16 unmounts; unmount it by hand", quote(dir))
}

func isOverlay(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == overlayMagic
}

func (overlayBackend) Stage(ctx context.Context, req Request) (res *Result, err error) {
	if !filepath.IsAbs(req.Base) || !filepath.IsAbs(req.Dir) {
		return nil, fmt.Errorf("stage %s into %s: both paths must be absolute", quote(req.Base), quote(req.Dir))
	}
	base, dir := filepath.Clean(req.Base), filepath.Clean(req.Dir)
	layers := layersDir(dir)
	for _, p := range []string{dir, layers} {
		if p == base || strings.HasPrefix(p, base+string(filepath.Separator)) || strings.HasPrefix(base, p+string(filepath.Separator)) {
			return nil, fmt.Errorf("cannot stage %s into %s: the base and the overlay would overlap", quote(base), quote(p))
		}
	}
	var root unix.Stat_t
	if err := unix.Stat(base, &root); err != nil {
		return nil, fmt.Errorf("stage %s: %w", quote(base), err)
	}
	if root.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("stage %s: not a directory", quote(base))
	}
	if err := os.Mkdir(layers, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("overlay layers %s already exist; choose another transaction id or remove them", quote(layers))
		}
		return nil, fmt.Errorf("create overlay layers %s: %w", quote(layers), unwrapPath(err))
	}
	defer func() {
		if err != nil {
			overlayBackend{}.Remove(context.WithoutCancel(ctx), dir)
		}
	}()
	upper, work := filepath.Join(layers, upperName), filepath.Join(layers, workName)
	for _, p := range []string{upper, work} {
		if err := os.Mkdir(p, 0o700); err != nil {
			return nil, fmt.Errorf("create overlay layer %s: %w", quote(p), unwrapPath(err))
		}
	}
	// The merged root takes its owner, mode and times from the upper
	// root: make them the base's. A hosted overlay's user cannot give
	// away what it owns, and owns both as a rule.
	if !req.Hosted {
		if err := os.Lchown(upper, int(root.Uid), int(root.Gid)); err != nil {
			return nil, fmt.Errorf("overlay layer %s: %w", quote(upper), unwrapPath(err))
		}
	}
	if err := os.Chmod(upper, safefs.FileMode(root.Mode)); err != nil {
		return nil, fmt.Errorf("overlay layer %s: %w", quote(upper), unwrapPath(err))
	}
	if err := setTimes(upper, root.Mtim.Nano(), root.Mtim.Nano()); err != nil {
		return nil, fmt.Errorf("overlay layer %s: %w", quote(upper), err)
	}
	// The open mark comes before the mount: every base change the command
	// could have seen through the mount has a later ctime.
	if err := os.WriteFile(filepath.Join(layers, openedName), nil, 0o600); err != nil {
		return nil, fmt.Errorf("overlay open mark: %w", unwrapPath(err))
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("staged workspace %s already exists; choose another transaction id or remove it", quote(dir))
		}
		return nil, fmt.Errorf("create staged workspace %s: %w", quote(dir), unwrapPath(err))
	}
	if req.Hosted {
		// The mark comes last: an overlay whose staging failed half-way
		// is never mistaken for one a command may mount.
		if err := os.WriteFile(filepath.Join(layers, hostedName), nil, 0o600); err != nil {
			return nil, fmt.Errorf("overlay hosted mark: %w", unwrapPath(err))
		}
	} else if err := mountOverlay(base, upper, work, dir); err != nil {
		return nil, err
	}
	if req.Progress != nil {
		req.Progress(0, 0)
	}
	// Nothing is measured: the diff reads the upper layer and the base as
	// they are then.
	return &Result{Base: &manifest.Manifest{}, Staged: &manifest.Manifest{}}, nil
}

// Remove unmounts the staged path, then removes the empty mount point
// with rmdir, which cannot delete anything beneath it, and then the
// layers. Nothing is ever removed through the mount: if the staged path
// is still a mount point, or not empty, Remove stops.
func (overlayBackend) Remove(ctx context.Context, dir string) error {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) || dir == "/" {
		return fmt.Errorf("refusing to remove staged workspace %s: not an absolute path below /", quote(dir))
	}
	// A hosted overlay is mounted in the command's namespace alone, and
	// its mount point can be removed from here whatever is still running
	// there (the kernel detaches mounts of other namespaces on rmdir).
	// Only root can unmount; for anyone else isOverlay below tells a
	// mount still there.
	if !isHosted(dir) && os.Geteuid() == 0 {
		if err := unmountAll(dir); err != nil {
			return err
		}
	}
	if isOverlay(dir) {
		return fmt.Errorf("staged workspace %s is still an overlay mount; unmount it by hand (umount -l) and retry", quote(dir))
	}
	if err := unix.Rmdir(dir); err != nil && err != unix.ENOENT {
		if err == unix.ENOTEMPTY || err == unix.EEXIST {
			return fmt.Errorf("staged workspace %s is not an empty mount point after unmounting; remove it by hand after checking what it holds", quote(dir))
		}
		return fmt.Errorf("remove staged workspace %s: %w", quote(dir), err)
	}
	return removeTree(ctx, layersDir(dir))
}

// remount mounts the overlay again over its kept layers, as after a
// reboot dropped the mount, so the staged workspace reads as it was left.
// A hosted overlay is never mounted here: its upper layer is read as it
// is.
func remount(base, dir string) error {
	if isOverlay(dir) || isHosted(dir) {
		return nil
	}
	layers := layersDir(dir)
	if _, err := os.Lstat(filepath.Join(layers, upperName)); err != nil {
		return fmt.Errorf("overlay layers of %s: %w", quote(dir), unwrapPath(err))
	}
	return mountOverlay(base, filepath.Join(layers, upperName), filepath.Join(layers, workName), dir)
}

// Changes reads the change set from the upper layer: every entry there is
// something the command created, copied up or deleted (a whiteout, or an
// opaque directory hiding the base's). Each is compared with the base, so
// a file copied up but left as it was (a chmod back, a rewrite with the
// same bytes) is no change.
//
// The base entry of a change is the base path as it is now when its ctime
// shows it unchanged since open; a base path changed since open gets an
// entry no stat can match, so the commit's drift check takes it as drift
// instead of overwriting an edit the command never saw.
func (overlayBackend) Changes(ctx context.Context, req DiffRequest) (*changeset.Set, error) {
	dir := filepath.Clean(req.Dir)
	if err := remount(req.Base, dir); err != nil {
		return nil, fmt.Errorf("the overlay of %s is not mounted and could not be mounted again: %w", quote(dir), err)
	}
	layers := layersDir(dir)
	var mark unix.Stat_t
	if err := unix.Lstat(filepath.Join(layers, openedName), &mark); err != nil {
		return nil, fmt.Errorf("overlay open mark in %s: %w", quote(layers), err)
	}
	d := &overlayDiff{ctx: ctx, base: req.Base, upper: filepath.Join(layers, upperName), skip: req.Skip,
		opened: mark.Ctim.Nano(), clock: req.BaseClock, set: &changeset.Set{}}
	upper, err := safefs.OpenRoot(d.upper)
	if err != nil {
		return nil, fmt.Errorf("overlay upper layer of %s: %w", quote(dir), unwrapPath(err))
	}
	defer upper.Close()
	d.upperRoot = upper
	lower, err := safefs.OpenRoot(d.base)
	if err != nil {
		return nil, fmt.Errorf("overlay lower layer (the base) %s: %w", quote(d.base), unwrapPath(err))
	}
	defer lower.Close()
	d.lowerRoot = lower
	if err := d.dir("", false); err != nil {
		return nil, err
	}
	slices.SortFunc(d.set.Changes, func(a, b changeset.Change) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(d.set.Unsupported)
	return d.set, nil
}

// ContentDir is the upper layer, where Changes measured every changed file.
func (overlayBackend) ContentDir(dir string) string {
	return filepath.Join(layersDir(dir), upperName)
}

type overlayDiff struct {
	ctx         context.Context
	base, upper string
	skip        func(string, bool) bool
	opened      int64
	clock       fsclock.Clock // the base's
	set         *changeset.Set
	// upperRoot is where a changed file's bytes are read: beneath the
	// upper layer, never through a symlink the command put on the way.
	upperRoot *safefs.Root
	// lowerRoot is where a base file's bytes are compared from, the same
	// way: beneath the base, never a FIFO or device.
	lowerRoot *safefs.Root
}

func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func (d *overlayDiff) lower(rel string) string { return filepath.Join(d.base, filepath.FromSlash(rel)) }
func (d *overlayDiff) up(rel string) string    { return filepath.Join(d.upper, filepath.FromSlash(rel)) }

// lowerEntry measures the base at rel; nil when absent. A FIFO, socket or
// device in the base was never part of the surface: it counts as absent,
// as in changeset.Diff.
func (d *overlayDiff) lowerEntry(rel string) (*manifest.Entry, error) {
	e, err := manifest.Lstat(d.lower(rel))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("measure base %s: %w", quote(d.lower(rel)), unwrapPath(err))
	}
	if e.Kind == manifest.KindOther {
		return nil, nil
	}
	e.Path = rel
	return &e, nil
}

// atOpen is the base entry the change set records: the base path as it
// is now if its ctime proves it unchanged since open, else the same
// facts with the stat fields that no real file has, so that the commit's
// drift check cannot take it for unchanged. The proof needs the ctime
// older than the open mark by the base's clock window: a change stamped
// in the step the mark was made in may have come after it.
func (d *overlayDiff) atOpen(l manifest.Entry) manifest.Entry {
	if d.clock.Proves(l.CtimeNs, d.opened) {
		return l
	}
	l.MtimeNs, l.CtimeNs, l.Ino = 0, 0, 0
	return l
}

// dir diffs the upper directory rel. hidden says the base's entries below
// rel are hidden from the merged tree (rel or a parent is opaque, or was
// created over something else): those the upper layer does not hold were
// deleted.
func (d *overlayDiff) dir(rel string, hidden bool) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	names, err := readDirNames(d.up(rel))
	if err != nil {
		return err
	}
	inUpper := map[string]bool{}
	for _, name := range names {
		inUpper[name] = true
		if err := d.entry(join(rel, name), hidden); err != nil {
			return err
		}
	}
	if !hidden {
		return nil
	}
	l, err := d.lowerEntry(rel)
	if err != nil || l == nil || l.Kind != manifest.KindDir {
		return err
	}
	lowerNames, err := readDirNames(d.lower(rel))
	if err != nil {
		return err
	}
	for _, name := range lowerNames {
		if !inUpper[name] {
			if err := d.deleteTree(join(rel, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

func readDirNames(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", quote(p), unwrapPath(err))
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", quote(p), unwrapPath(err))
	}
	slices.Sort(names)
	return names, nil
}

// entry diffs one upper entry against the base.
func (d *overlayDiff) entry(rel string, hidden bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(d.up(rel), &st); err != nil {
		return fmt.Errorf("measure %s: %w", quote(d.up(rel)), err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if d.skip != nil && d.skip(rel, isDir) {
		return nil // outside the surface, as staging would have left it
	}
	if manifest.IsGitMeta(rel) {
		d.set.GitMeta++
		return nil
	}
	l, err := d.lowerEntry(rel)
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0 {
		// A whiteout: the command deleted the base's entry.
		if l != nil {
			return d.deleteTree(rel)
		}
		return nil
	}
	u, err := manifest.Lstat(d.up(rel))
	if err != nil {
		return fmt.Errorf("measure %s: %w", quote(d.up(rel)), err)
	}
	u.Path = rel
	if u.Kind == manifest.KindOther {
		d.set.Unsupported = append(d.set.Unsupported, manifest.Bytes(rel))
		return nil
	}
	switch {
	case l == nil:
		base := manifest.Entry{Path: rel}
		if hasXattr(d.up(rel), xattrOrigin) || hasXattr(d.up(rel), xattrUserOrigin) {
			// Copied up from a base entry that is gone now: deleted in
			// the base since the command touched it.
			base.Kind = u.Kind
		}
		op := changeset.Add
		if base.Kind != manifest.KindNone {
			op = changeset.Modify
		}
		d.add(changeset.Change{Path: rel, Op: op, Base: base, Result: u})
	case l.Kind != u.Kind:
		d.add(changeset.Change{Path: rel, Op: changeset.Modify, Base: d.atOpen(*l), Result: u})
		if l.Kind == manifest.KindDir {
			if err := d.deleteChildren(rel); err != nil {
				return err
			}
		}
	default:
		changed, err := d.differs(*l, u)
		if err != nil {
			return err
		}
		if changed {
			d.add(changeset.Change{Path: rel, Op: changeset.Modify, Base: d.atOpen(*l), Result: u})
		}
	}
	if u.Kind == manifest.KindDir {
		opaque := l == nil || l.Kind != manifest.KindDir || isOpaque(d.up(rel))
		return d.dir(rel, hidden || opaque)
	}
	return nil
}

func (d *overlayDiff) add(c changeset.Change) { d.set.Changes = append(d.set.Changes, c) }

// differs compares an upper entry with the base entry of the same kind.
func (d *overlayDiff) differs(l, u manifest.Entry) (bool, error) {
	if !manifest.SameShape(l, u) {
		return true, nil
	}
	if u.Kind != manifest.KindFile {
		return false, nil
	}
	if l.Size != u.Size {
		return true, nil
	}
	return changeset.DifferStaged(d.lowerRoot, l, d.upperRoot, u)
}

// deleteTree records the deletion of the base's rel and everything in it.
func (d *overlayDiff) deleteTree(rel string) error {
	l, err := d.lowerEntry(rel)
	if err != nil || l == nil {
		return err
	}
	if d.skip != nil && d.skip(rel, l.Kind == manifest.KindDir) {
		return nil
	}
	if manifest.IsGitMeta(rel) {
		d.set.GitMeta++
		return nil
	}
	d.add(changeset.Change{Path: rel, Op: changeset.Delete, Base: d.atOpen(*l)})
	if l.Kind == manifest.KindDir {
		return d.deleteChildren(rel)
	}
	return nil
}

// deleteChildren records the deletion of everything beneath the base
// directory rel, within the surface.
func (d *overlayDiff) deleteChildren(rel string) error {
	m, err := manifest.Walk(d.ctx, d.lower(rel), manifest.WalkOptions{Skip: func(sub string, isDir bool) bool {
		return d.skip != nil && d.skip(join(rel, sub), isDir)
	}})
	if err != nil {
		return fmt.Errorf("measure base %s: %w", quote(d.lower(rel)), err)
	}
	for _, e := range m.Entries {
		e.Path = join(rel, e.Path)
		if manifest.IsGitMeta(e.Path) {
			d.set.GitMeta++
			continue
		}
		if e.Kind == manifest.KindOther {
			continue
		}
		d.add(changeset.Change{Path: e.Path, Op: changeset.Delete, Base: d.atOpen(e)})
	}
	return nil
}

func isOpaque(p string) bool {
	for _, name := range []string{xattrOpaque, xattrUserOpaque} {
		buf := make([]byte, 8)
		if n, err := unix.Lgetxattr(p, name, buf); err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

func hasXattr(p, name string) bool {
	_, err := unix.Lgetxattr(p, name, nil)
	return err == nil
}

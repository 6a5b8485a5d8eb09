package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// UnsafeLocationError reports a state root that lies inside a directory
// another user controls. Whoever can rename entries of a directory can move
// airlock's state away and put their own in its place, with records, journals
// and locks of their making; checking the state itself cannot catch that, so
// its location is checked the way ssh checks the path to authorized_keys.
type UnsafeLocationError struct {
	Root   string // the state root
	Dir    string // the directory on its way that is unsafe
	Reason string // what is wrong with Dir
}

func (e *UnsafeLocationError) Error() string {
	return fmt.Sprintf("unsafe location for the airlock state directory %s: %s %s, so another user could move airlock's state away and put their own in its place; set AIRLOCK_STATE_DIR to a directory whose every parent is owned by you or root and not writable by others (a sticky directory such as /tmp is fine), or fix %s", e.Root, e.Dir, e.Reason, e.Dir)
}

// maxSymlinkHops bounds the resolution of symlinks on the way to the state
// root, as the kernel's own limit does (MAXSYMLINKS).
const maxSymlinkHops = 40

// checkAncestors refuses the state root root unless every directory on its
// way, from / down, symlinks resolved, is owned by the user or root and is
// writable by nobody else unless it is sticky. A sticky directory (/tmp)
// lets others add entries but not rename or remove ours. The directories
// that do not exist yet are the ones Open creates, as the user, 0700; the
// walk stops at the first of them. root itself is checked by checkDir.
func checkAncestors(root string) error {
	hops := 0
	_, err := walkChecked(root, filepath.Dir(root), &hops)
	return err
}

// errMissing stops a walk at a directory that does not exist yet.
var errMissing = errors.New("missing")

// walkChecked resolves the absolute path p component by component, checking
// every directory it passes through, including those a symlink leads to,
// and returns the resolved path. A missing component ends the walk without
// error: nothing below it can belong to anyone else yet.
func walkChecked(root, p string, hops *int) (string, error) {
	cur := string(filepath.Separator)
	if err := checkAncestor(root, cur); err != nil {
		return "", err
	}
	for _, name := range strings.Split(filepath.Clean(p), string(filepath.Separator)) {
		if name == "" {
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("check the location of state directory %s: %w", root, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// The symlink itself cannot be changed, only replaced by whoever
			// may write its directory, which was checked: what it leads to
			// is checked as a path of its own.
			if *hops++; *hops > maxSymlinkHops {
				return "", fmt.Errorf("check the location of state directory %s: too many levels of symbolic links at %s", root, next)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", fmt.Errorf("check the location of state directory %s: %w", root, err)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			resolved, err := walkChecked(root, target, hops)
			if err != nil || resolved == "" {
				return "", err
			}
			cur = resolved
			continue
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("check the location of state directory %s: %s is not a directory", root, next)
		}
		if err := checkAncestorInfo(root, next, fi); err != nil {
			return "", err
		}
		cur = next
	}
	return cur, nil
}

func checkAncestor(root, dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check the location of state directory %s: %w", root, err)
	}
	return checkAncestorInfo(root, dir, fi)
}

func checkAncestorInfo(root, dir string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &UnsafeLocationError{Root: root, Dir: dir, Reason: "has an owner that cannot be determined"}
	}
	if !ownerTrusted(int64(st.Uid)) {
		return &UnsafeLocationError{Root: root, Dir: dir, Reason: fmt.Sprintf("is owned by uid %d, neither you (uid %d) nor root, who can rename what it holds", st.Uid, os.Getuid())}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return &UnsafeLocationError{Root: root, Dir: dir, Reason: fmt.Sprintf("is writable by group or others without the sticky bit (mode %04o)", perm)}
	}
	return nil
}

// ownerTrusted reports whether the owner of a directory on the way to the
// state root may be trusted: the user or root. Inside a user namespace
// (airlock run's sandbox, where an MCP server may be started) every file of
// an owner the namespace does not map, root's / included, shows the
// kernel's overflow uid; the owner is unknowable there, and airlock outside
// the namespace checked the same path with the real owners.
func ownerTrusted(uid int64) bool {
	if uid == 0 || uid == int64(os.Getuid()) {
		return true
	}
	return uid == overflowUID() && inUserNamespace()
}

func overflowUID() int64 {
	b, err := os.ReadFile("/proc/sys/kernel/overflowuid")
	if err != nil {
		return 65534
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 65534
	}
	return n
}

// inUserNamespace reports whether this process's uid map is anything but
// the initial namespace's identity map of every uid.
func inUserNamespace() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	return !isInitialUIDMap(string(b))
}

func isInitialUIDMap(m string) bool {
	f := strings.Fields(m)
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

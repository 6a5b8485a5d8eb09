package airlock

import "fmt"

// baseView finds the base for a process that cannot see it at its own
// path: inside the private mount namespace of `airlock run`'s same-path
// mode, the base's path shows the staged workspace (a stop hook of the
// agent runs there). The process that opened the transaction, airlock run
// itself, still sees the real base, and /proc/PID/root reaches its view of
// the file system. The view counts only when it is the very directory the
// transaction opened (device and inode), so a reused PID finds nothing.
func baseView(t *Tx) (string, bool) {
	bdev, bino, err := identity(t.Base())
	if err != nil {
		return "", false
	}
	sdev, sino, err := identity(t.Path())
	if err != nil || bdev != sdev || bino != sino {
		return "", false
	}
	view := fmt.Sprintf("/proc/%d/root%s", t.rec.PID, t.Base())
	dev, ino, err := identity(view)
	if err != nil || dev != t.rec.BaseDevice || ino != t.rec.BaseInode {
		return "", false
	}
	return view, true
}

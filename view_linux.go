package airlock

import "fmt"

// ownerView finds the base for a process inside the private mount
// namespace of `airlock run`'s same-path mode, where the base's path shows
// the staged workspace (a stop hook of the agent runs there). The process
// that opened the transaction, airlock run itself, still sees the real
// base, and /proc/PID/root reaches its view of the file system where the
// kernel lets this process look (not from an unprivileged user namespace
// into its parent's). The view counts only when it is the very directory
// the transaction opened (its identity), so a reused PID finds nothing.
func ownerView(t *Tx) (string, bool) {
	view := fmt.Sprintf("/proc/%d/root%s", t.rec.PID, t.Base())
	if !sameDir(view, t.baseIdentity()) {
		return "", false
	}
	return view, true
}

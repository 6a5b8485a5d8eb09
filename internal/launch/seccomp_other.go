//go:build !linux

package launch

// TerminalSupport reports that the terminal guard is Linux-only: a seccomp
// filter, installed by the same-path helper.
func TerminalSupport() (ok bool, reason string) {
	return false, "the guard is a seccomp filter, which is Linux-only"
}

// LinkGuard reports that Spec.Watched cannot be honoured: the guard is a
// seccomp filter.
func LinkGuard() bool { return false }

//go:build !linux

package launch

import (
	"context"
	"errors"
)

const reasonUnsupported = "mount namespaces are Linux-only"

// Init must be the first call in main. Same-path mode needs no helper
// here, since it is never available; Init does nothing.
func Init() {}

// SamePathSupport reports whether same-path mode works here: never, off
// Linux.
func SamePathSupport() (ok bool, reason string) { return false, reasonUnsupported }

func runSamePath(context.Context, Spec, *forwarder) (Result, string, error) {
	return Result{}, reasonUnsupported, nil
}

// TryMount reports that mounts in a namespace are Linux-only.
func TryMount(Mount, string, []string) error { return errors.New(reasonUnsupported) }

// ContainSupport reports that PID namespaces are Linux-only.
func ContainSupport() (ok bool, reason string) { return false, "PID namespaces are Linux-only" }

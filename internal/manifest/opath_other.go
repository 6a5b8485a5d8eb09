//go:build !linux

package manifest

import "golang.org/x/sys/unix"

// pathOnly: elsewhere nothing watches a tree (internal/watch is Linux's),
// and a plain read-only open serves.
const pathOnly = unix.O_RDONLY

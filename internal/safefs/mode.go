//go:build linux || darwin

package safefs

import (
	"fmt"
	"io/fs"
)

// TypeName names the type of a file mode, article included, in the words
// every airlock message uses ("is a FIFO, not a regular file"). Only the
// type bits count.
func TypeName(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symlink"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device node"
	}
	return "a file of unknown type"
}

// Octal shows a mode's permission bits as chmod takes them, setuid, setgid
// and sticky included (04755, not Go's "urwxr-xr-x").
func Octal(m fs.FileMode) string {
	return fmt.Sprintf("%04o", sysMode(m))
}

//go:build !linux

package state

import (
	"fmt"
	"os"
)

// fsIdentity is the device number outside Linux. macOS's f_fsid is the
// device number and the file system type, so it is no better; a volume's
// UUID (getattrlist ATTR_VOL_UUID) is not used yet: a base's apply in
// flight is still found by its path after a disk comes back under
// another device number.
func fsIdentity(_ *os.File, dev uint64) string { return devFS(dev) }

func devString(dev uint64) string { return fmt.Sprintf("%#x", dev) }

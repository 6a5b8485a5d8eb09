package manifest

import "golang.org/x/sys/unix"

// pathOnly opens a directory for stepping through and stating names only,
// as no watch counts an open (see Patch).
const pathOnly = unix.O_PATH

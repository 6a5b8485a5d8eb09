package airlock

import (
	"os"
	"path/filepath"
	"strconv"
)

// workspaceUser finds a process whose working directory lies in the
// staged workspace dir: an agent session still working there (reading, so
// far) though the process that opened the transaction is gone. Processes
// this one may not look at are not seen.
func workspaceUser(dir string) (int, bool) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, true // cannot tell: in use, as far as gc knows
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		for _, d := range []string{dir, real} {
			if rel, err := filepath.Rel(d, cwd); err == nil && filepath.IsLocal(rel) || cwd == d {
				return pid, true
			}
		}
	}
	return 0, false
}

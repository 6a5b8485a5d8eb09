package airlock

import (
	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
)

// clocks are the timestamp clocks (fsclock) a transaction over base relies
// on: the state file system's, measured once by a probe in the state root
// and cached there, and the base's. The base's is the same clock where the
// base lies on the state's file system (the same device). Elsewhere it is
// assumed coarse (2 s): measuring it would mean writing a probe into the
// base, and airlock writes nothing there outside a commit. The cost of
// assuming is small: only base files changed in the 2 s before an open are
// digested then, and compared by bytes at the commit.
func (s *Store) clocks(base string) (stateClock, baseClock fsclock.Clock) {
	if err := s.ensure(); err != nil {
		c := fsclock.Assume(s.Dir(), "the state directory cannot be opened: "+err.Error())
		return c, fsclock.Assume(base, c.Why)
	}
	stateClock = s.st().Clock()
	if sameFS(base, s.Dir()) {
		return stateClock, stateClock
	}
	return stateClock, fsclock.Assume(base, "airlock writes nothing into the base outside a commit, and the state directory is on another file system")
}

// sameFS reports whether a and b lie on the same file system.
func sameFS(a, b string) bool {
	x, err := manifest.Lstat(a)
	if err != nil {
		return false
	}
	y, err := manifest.Lstat(b)
	return err == nil && x.Dev == y.Dev
}

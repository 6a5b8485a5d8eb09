package merge

import "io/fs"

// Mode merges the permission modes of one path the way git merges modes: a
// side that left the mode as it was yields to the other, two sides that
// made the same change agree, and two different changes conflict (false,
// with the zero mode). Modes of different file types never merge: a type
// change is not a permission change, and the caller must refuse it.
func Mode(ancestor, ours, theirs fs.FileMode) (fs.FileMode, bool) {
	if ours.Type() != ancestor.Type() || theirs.Type() != ancestor.Type() {
		return 0, false
	}
	switch {
	case ours == theirs:
		return ours, true
	case ours == ancestor:
		return theirs, true
	case theirs == ancestor:
		return ours, true
	}
	return 0, false
}

package patch

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// Gap is a change that the patch leaves out, or that `git apply` would not
// reproduce exactly, with the reason.
type Gap struct {
	Path   string
	Reason string
}

// Gaps lists, in path order, what files hold that a git patch cannot carry:
// empty directories added or removed, directory mode changes, file modes
// that `git apply` would not recreate under a usual umask (022 or 002), a
// change of permission bits other than the owner's executable bit, and
// entries that are neither file, directory nor symlink. It reads no
// content.
func Gaps(files []File) []Gap {
	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	// holds reports whether any file or symlink on the given side lies
	// beneath dir, which is what makes git create or remove it.
	holds := func(dir string, side func(File) Side) bool {
		prefix := dir + "/"
		i, _ := slices.BinarySearchFunc(sorted, prefix, func(f File, p string) int { return strings.Compare(f.Path, p) })
		for ; i < len(sorted) && strings.HasPrefix(sorted[i].Path, prefix); i++ {
			if gitMode(side(sorted[i])) != 0 {
				return true
			}
		}
		return false
	}
	oldSide := func(f File) Side { return f.Old }
	newSide := func(f File) Side { return f.New }

	var gaps []Gap
	add := func(path, format string, args ...any) {
		gaps = append(gaps, Gap{path, fmt.Sprintf(format, args...)})
	}
	for _, f := range sorted {
		o, n := f.Old, f.New
		switch {
		case o.Kind == manifest.KindOther || n.Kind == manifest.KindOther:
			add(f.Path, "a FIFO, socket or device node is not representable in a patch")
		case o.Kind == manifest.KindDir && n.Kind == manifest.KindDir:
			add(f.Path, "directory mode %s -> %s is not representable in a patch", safefs.Octal(o.Mode), safefs.Octal(n.Mode))
		case n.Kind == manifest.KindDir && !holds(f.Path, newSide):
			add(f.Path, "an empty directory is not representable in a patch")
		case o.Kind == manifest.KindDir && n.Kind == manifest.KindNone && !holds(f.Path, oldSide):
			add(f.Path, "removing an empty directory is not representable in a patch")
		}
		if n.Kind != manifest.KindFile {
			continue
		}
		om, nm := o.Mode&manifest.ModeMask, n.Mode&manifest.ModeMask
		switch {
		case !plainPerm[nm]:
			add(f.Path, "mode %s: git apply creates files with 0666 or 0777 less its umask", safefs.Octal(n.Mode))
		case o.Kind == manifest.KindFile && (om^nm)&^0o111 != 0:
			add(f.Path, "mode %s -> %s: a patch carries only the executable bit", safefs.Octal(o.Mode), safefs.Octal(n.Mode))
		}
	}
	return gaps
}

// plainPerm holds the modes git apply gives a file under umask 022 or 002.
var plainPerm = map[fs.FileMode]bool{0o644: true, 0o664: true, 0o755: true, 0o775: true}

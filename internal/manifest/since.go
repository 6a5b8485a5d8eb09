package manifest

import (
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/fsclock"
)

// Since is a previous measurement of a walk's root, from which the walk
// takes a directory's names instead of reading them where the directory's
// stat proves them unchanged, as git's untracked cache does. Adding,
// removing or renaming an entry moves its directory's mtime and ctime, and
// no user call sets a ctime: a directory that shows the very stat it had
// (mtime, ctime, inode, device, mode), whose ctime was older by the
// clock's window (fsclock.Clock.Proves) than WalkNs, has had the same
// names since WalkNs. Writing a file's bytes moves no directory, so every
// entry is still measured: only the listing (getdents) is saved.
//
// The root's own listing is always read: its stat is in no manifest.
type Since struct {
	// Manifest is the previous measurement. For each directory it holds
	// that Listed accepts, it must hold every name the directory had at a
	// moment after WalkNs, with the directory's stat from that moment or
	// later (a walk begun at WalkNs does; Walk's own manifests say where
	// a Skip left a name out: see Listed). Entries of any kind count as
	// names, KindNone included: a name whose other facts are unknown.
	Manifest *Manifest
	// WalkNs is that moment, on this machine's clock (ns since the epoch).
	WalkNs int64
	// Clock is the timestamp clock of the root's file system. A directory
	// on another device (a mount beneath the root) is always read.
	Clock fsclock.Clock
	// Listed reports whether Manifest names every entry of dir. Nil: it
	// does for every directory it holds.
	Listed func(dir string) bool
}

// Listed reports whether m, made by Walk, names every entry of each
// directory it holds but those of the directories in unlisted (sorted):
// the ones where the walk's Skip left an entry out ("" is the root). A
// manifest decoded from a file does not say (ok false), nor does one a
// caller built, unless marked with MarkListed.
func (m *Manifest) Listed() (unlisted []string, ok bool) {
	return m.unlisted, m.listed
}

// MarkListed says that m names every entry of each directory it holds
// but those of the directories in unlisted (see Listed): for a manifest
// built from a walk's entries, path for path.
func (m *Manifest) MarkListed(unlisted []string) {
	m.listed = true
	m.unlisted = slices.Clone(unlisted)
	slices.Sort(m.unlisted)
}

// Reused is how many directories the walk that made m took the names of
// from WalkOptions.Since instead of reading them.
func (m *Manifest) Reused() int { return m.reused }

// sinceNames gives the names of directory rel, open at fd, from the
// previous measurement where its stat proves them unchanged (ok true);
// otherwise ok false and the caller reads them.
func (w *walker) sinceNames(rel string, fd int) ([]string, bool, error) {
	s := w.since
	if s == nil || rel == "" {
		return nil, false, nil
	}
	es := s.Manifest.Entries
	i := search(es, rel)
	if i == len(es) || es[i].Path != rel {
		return nil, false, nil
	}
	was := &es[i]
	if was.Kind != KindDir || was.Dev != w.rootDev || !s.Clock.Proves(was.CtimeNs, s.WalkNs) {
		return nil, false, nil
	}
	// The directory opened, not only the one its parent measured: one
	// put in its place since has other names.
	var st unix.Stat_t
	for {
		err := unix.Fstat(fd, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		break
	}
	now := FromStat(&st)
	if now.Kind != KindDir || now.Mode != was.Mode || now.MtimeNs != was.MtimeNs || now.CtimeNs != was.CtimeNs ||
		now.Ino != was.Ino || now.Dev != was.Dev {
		return nil, false, nil
	}
	if s.Listed != nil && !s.Listed(rel) {
		return nil, false, nil
	}
	w.reused.Add(1)
	return childNames(es, i), true, nil
}

// childNames lists the names of the entries directly beneath es[i], a
// directory, in sorted es: they lie among its descendants, from the first
// path that starts with its own and "/" (siblings such as "d.x" sort
// between "d" and "d/a"), and the subtrees beneath them are passed over by
// a search each.
func childNames(es []Entry, i int) []string {
	prefix := es[i].Path + "/"
	var names []string
	for k := i + 1 + search(es[i+1:], prefix); k < len(es); {
		p := es[k].Path
		if !strings.HasPrefix(p, prefix) {
			break
		}
		rest := p[len(prefix):]
		slash := strings.IndexByte(rest, '/')
		if slash < 0 {
			names = append(names, rest)
			k++
			continue
		}
		// A descendant whose directory the manifest did not hold (or
		// that sorts after a sibling): skip past that directory's
		// subtree, every path of which starts with prefix+name+"/" and
		// sorts before prefix+name+"0".
		past := prefix + rest[:slash] + "0"
		k += max(search(es[k:], past), 1)
	}
	return names
}

// search is the index of the first entry of sorted es whose path is not
// below p.
func search(es []Entry, p string) int {
	k, _ := slices.BinarySearchFunc(es, p, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	return k
}

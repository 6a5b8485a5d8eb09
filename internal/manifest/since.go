package manifest

import (
	"slices"
	"strings"
	"sync"

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
	// Ready, if set, is closed once the fields above may be read (the
	// caller decodes the previous measurement beside the walk, which reads
	// the directories it meets before then); a nil Manifest then means
	// there is none.
	Ready <-chan struct{}
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

// sinceState is the walk's use of a Since: its index of the manifest's
// directories, built once the manifest is ready.
type sinceState struct {
	s     *Since
	once  sync.Once
	index sinceIndex // nil: no manifest
}

// get returns the Since and its index once they are ready, nil before
// then or where there is no manifest.
func (st *sinceState) get() (*Since, sinceIndex) {
	if st == nil {
		return nil, nil
	}
	if st.s.Ready != nil {
		select {
		case <-st.s.Ready:
		default:
			return nil, nil
		}
	}
	st.once.Do(func() {
		if st.s.Manifest != nil {
			st.index = indexSince(st.s.Manifest.Entries)
		}
	})
	if st.index == nil {
		return nil, nil
	}
	return st.s, st.index
}

// sinceIndex is a Since manifest's directories by path: each one's entry
// and the names beneath it, built in one pass before the walk starts (a
// search per directory cost as much as the reads it saves).
type sinceIndex map[string]*sinceDir

type sinceDir struct {
	self  int // the directory's entry, -1 where the manifest holds none
	names []string
}

func indexSince(es []Entry) sinceIndex {
	idx := make(sinceIndex, len(es)/8+1)
	get := func(dir string) *sinceDir {
		d, ok := idx[dir]
		if !ok {
			d = &sinceDir{self: -1}
			idx[dir] = d
		}
		return d
	}
	for i := range es {
		p := es[i].Path
		if es[i].Kind == KindDir {
			get(p).self = i
		}
		parent, name := "", p
		if k := strings.LastIndexByte(p, '/'); k >= 0 {
			parent, name = p[:k], p[k+1:]
		}
		d := get(parent)
		d.names = append(d.names, name)
	}
	return idx
}

// sinceNames gives the names of directory rel, open at fd, from the
// previous measurement where its stat proves them unchanged (ok true);
// otherwise ok false and the caller reads them.
func (w *walker) sinceNames(rel string, fd int) ([]string, bool, error) {
	if rel == "" {
		return nil, false, nil
	}
	s, idx := w.since.get()
	if s == nil {
		return nil, false, nil
	}
	d, ok := idx[rel]
	if !ok || d.self < 0 {
		return nil, false, nil
	}
	was := &s.Manifest.Entries[d.self]
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
	// The walk appends to its own slice, never to this one.
	return slices.Clip(d.names), true, nil
}

package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/selector"
)

// surfaceView is the base's surface with every regular file's digest: what
// the receipt's base and result digests are computed over.
type surfaceView struct {
	entries []manifest.Entry
}

func (s *surfaceView) digest() (string, error) {
	return manifest.TreeDigest(s.entries, func(e *manifest.Entry) (string, error) { return e.Digest, nil })
}

// with is the surface after the change set is applied; the frozen digests
// say what each written file holds, so nothing is read again.
func (s *surfaceView) with(set *changeset.Set) *surfaceView {
	m := &manifest.Manifest{}
	byPath := make(map[string]int, len(s.entries))
	for _, e := range s.entries {
		byPath[e.Path] = len(m.Entries)
		m.Entries = append(m.Entries, e)
	}
	gone := map[int]bool{}
	for _, c := range set.Changes {
		i, ok := byPath[c.Path]
		switch {
		case c.Op == changeset.Delete && ok:
			gone[i] = true
		case c.Op != changeset.Delete && ok:
			r := c.Result
			r.Path = c.Path
			m.Entries[i] = r
		case c.Op != changeset.Delete:
			r := c.Result
			r.Path = c.Path
			m.Entries = append(m.Entries, r)
		}
	}
	out := &manifest.Manifest{}
	for i, e := range m.Entries {
		if !gone[i] {
			out.Entries = append(out.Entries, e)
		}
	}
	out.Sort()
	return &surfaceView{entries: out.Entries}
}

// surface measures the base's surface now and digests its files, reusing
// digests cached by stat for files that cannot have changed.
func (t *Tx) surface(ctx context.Context) (*surfaceView, error) {
	excl, err := selector.New(t.rec.Exclude)
	if err != nil {
		return nil, err
	}
	skip := func(rel string, isDir bool) bool {
		return filepath.Base(rel) == ".git" || excl.MatchSelf(rel, isDir)
	}
	m, err := manifest.Walk(ctx, t.Base(), manifest.WalkOptions{Skip: skip})
	if err != nil {
		return nil, err
	}
	b, err := t.store.st.Base(t.Base())
	if err != nil {
		return nil, err
	}
	cachePath := filepath.Join(b.Dir(), "digests.json")
	cache := loadDigestCache(cachePath)
	var todo []int
	for i := range m.Entries {
		e := &m.Entries[i]
		if e.Kind != manifest.KindFile {
			continue
		}
		if d, ok := cache.lookup(e); ok {
			e.Digest = d
			continue
		}
		todo = append(todo, i)
	}
	if err := hashEntries(ctx, t.Base(), m.Entries, todo); err != nil {
		return nil, err
	}
	if len(todo) > 0 {
		cache.store(cachePath, m.Entries)
	}
	return &surfaceView{entries: m.Entries}, nil
}

// hashEntries fills the digests of entries[todo] in parallel.
func hashEntries(ctx context.Context, dir string, entries []manifest.Entry, todo []int) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				e := &entries[i]
				d, err := manifest.HashFile(filepath.Join(dir, filepath.FromSlash(e.Path)))
				if err != nil {
					once.Do(func() { first = err })
					continue
				}
				e.Digest = d
			}
		}()
	}
	for _, i := range todo {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// digestCache remembers file digests by stat, as git's index does, so that
// a receipt's digests cost a stat walk plus the files that changed.
type digestCache struct {
	WrittenNs int64            `json:"written_ns"`
	Entries   []manifest.Entry `json:"entries"`
	byPath    map[string]*manifest.Entry
}

func loadDigestCache(path string) *digestCache {
	c := &digestCache{}
	b, err := os.ReadFile(path)
	if err == nil && json.Unmarshal(b, c) != nil {
		c = &digestCache{} // a damaged cache only costs hashing again
	}
	c.byPath = make(map[string]*manifest.Entry, len(c.Entries))
	for i := range c.Entries {
		c.byPath[c.Entries[i].Path] = &c.Entries[i]
	}
	return c
}

// lookup trusts a cached digest only when every stat fact matches and the
// file's ctime is safely older than the cache: a write in the same
// timestamp tick as the caching could otherwise go unseen.
func (c *digestCache) lookup(e *manifest.Entry) (string, bool) {
	old, ok := c.byPath[e.Path]
	if !ok || old.Digest == "" || !manifest.SameStat(*old, *e) {
		return "", false
	}
	if e.CtimeNs >= c.WrittenNs-racyWindow.Nanoseconds() {
		return "", false
	}
	return old.Digest, true
}

const racyWindow = 2 * time.Second

func (c *digestCache) store(path string, entries []manifest.Entry) {
	out := digestCache{WrittenNs: time.Now().UnixNano()}
	for _, e := range entries {
		if e.Kind == manifest.KindFile && e.Digest != "" {
			out.Entries = append(out.Entries, e)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	if err := safefs.WriteFile(path, b, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return // a cache that cannot be written only costs hashing again
	}
}

package state

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/safefs"
)

// clockFile caches the measured timestamp clocks of the file systems the
// state root has lived on (fsclock), by their fsclock.Key.
const clockFile = "fsclock.json"

type clockTable struct {
	Version int                      `json:"version"`
	Clocks  map[string]fsclock.Clock `json:"clocks"`
}

// clocks memoises, per process, the clock of each file system a state
// root was found on: a long-running process (the MCP server) opens many
// transactions.
var clocks sync.Map // Store.dir + "\x00" + fsclock.Key → fsclock.Clock

// Clock is the timestamp clock of the state root's file system: measured
// by a probe file in the root the first time, then read from the cache in
// the root (fsclock.json), so that it is measured once per file system and
// kernel, not once per transaction. A clock that cannot be measured is
// assumed coarse (fsclock.Assume), saying why, and not cached: the next
// call tries again.
func (s *Store) Clock() fsclock.Clock {
	key, err := fsclock.Key(s.dir)
	if err != nil {
		return fsclock.Assume(s.dir, err.Error())
	}
	memo := s.dir + "\x00" + key
	if c, ok := clocks.Load(memo); ok {
		return c.(fsclock.Clock)
	}
	path := filepath.Join(s.dir, clockFile)
	t := clockTable{Version: 1}
	if b, err := readChecked(path); err == nil {
		// A table that does not decode is measured afresh and replaced: it
		// is a cache.
		if json.Unmarshal(b, &t) != nil || t.Version != 1 {
			t = clockTable{Version: 1}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		// Not a file airlock can trust: never read, never replaced.
		return s.measureOnly(err.Error())
	}
	if c, ok := t.Clocks[key]; ok && c.Current() {
		clocks.Store(memo, c)
		return c
	}
	c, err := fsclock.Measure(s.dir)
	if err != nil {
		return fsclock.Assume(s.dir, err.Error())
	}
	if !c.Measured {
		return c
	}
	if t.Clocks == nil {
		t.Clocks = map[string]fsclock.Clock{}
	}
	t.Clocks[key] = c
	if b, err := json.Marshal(t); err == nil {
		// A cache that cannot be written costs a probe next time, no more.
		safefs.WriteFile(path, b, 0o600)
	}
	clocks.Store(memo, c)
	return c
}

// measureOnly measures the clock without the cache, which why says cannot
// be used.
func (s *Store) measureOnly(why string) fsclock.Clock {
	c, err := fsclock.Measure(s.dir)
	if err != nil {
		return fsclock.Assume(s.dir, err.Error()+"; and its cache: "+why)
	}
	return c
}

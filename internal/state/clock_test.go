package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/testbin"
)

// readClocks reads the state root's clock cache.
func readClocks(t *testing.T, s *Store) clockTable {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir(), clockFile))
	if err != nil {
		t.Fatal(err)
	}
	var tab clockTable
	if err := json.Unmarshal(b, &tab); err != nil {
		t.Fatal(err)
	}
	return tab
}

func writeClocks(t *testing.T, s *Store, tab clockTable) {
	t.Helper()
	b, err := json.Marshal(tab)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), clockFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestClockIsMeasuredOnceAndCached: the first call probes the state
// root's file system and caches the clock by its key; later calls, in
// this process or another (the memo cleared), read the cache instead of
// probing again; a cache from another kernel, or one that does not decode,
// is measured afresh and replaced.
func TestClockIsMeasuredOnceAndCached(t *testing.T) {
	s := openStore(t)
	clocks.Clear()
	c := s.Clock()
	if !c.Measured || c.StoredNs <= 0 {
		t.Fatalf("Clock = %+v, want a measured clock", c)
	}
	key, err := fsclock.Key(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	tab := readClocks(t, s)
	if got, ok := tab.Clocks[key]; !ok || got != c {
		t.Fatalf("cache %+v, want %s → %+v", tab, key, c)
	}
	// A cached clock is what a later process gets: mark it, and a probe
	// would not bring the mark back.
	marked := c
	marked.StoredNs = 7
	tab.Clocks[key] = marked
	writeClocks(t, s, tab)
	clocks.Clear()
	if got := s.Clock(); got != marked {
		t.Fatalf("Clock = %+v, want the cached %+v (measured again instead of read)", got, marked)
	}
	if got := s.Clock(); got != marked {
		t.Fatalf("a second call in the process: %+v, want %+v", got, marked)
	}
	// Another kernel's measurement is not trusted.
	marked.Kernel = "0.0-other"
	tab.Clocks[key] = marked
	writeClocks(t, s, tab)
	clocks.Clear()
	if got := s.Clock(); got.StoredNs == 7 || !got.Current() {
		t.Fatalf("Clock = %+v under another kernel's cache, want a fresh measurement", got)
	}
	if got := readClocks(t, s).Clocks[key]; !got.Current() {
		t.Errorf("the fresh measurement was not cached: %+v", got)
	}
	// A cache that does not decode is replaced.
	if err := os.WriteFile(filepath.Join(s.Dir(), clockFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	clocks.Clear()
	if got := s.Clock(); !got.Measured {
		t.Fatalf("Clock = %+v over a corrupt cache", got)
	}
	if got := readClocks(t, s).Clocks[key]; !got.Current() {
		t.Errorf("the corrupt cache was not replaced: %+v", got)
	}
}

// TestClockOfASecondsFS: a state root on a file system that keeps whole
// seconds gets a 1 s clock, and each file system has its own entry.
func TestClockOfASecondsFS(t *testing.T) {
	mnt := testbin.SecondsFS(t)
	s, err := Open(filepath.Join(mnt, "state"))
	if err != nil {
		t.Fatal(err)
	}
	clocks.Clear()
	if c := s.Clock(); c.StoredNs != 1e9 || !c.Measured {
		t.Fatalf("Clock = %+v (%s), want a measured 1 s clock", c, c)
	}
	fine := openStore(t)
	if c := fine.Clock(); c.StoredNs == 1e9 {
		t.Fatalf("the clock of %s is the seconds file system's: %+v", fine.Dir(), c)
	}
}

// TestClockUntrustedCache: a cache file that is not the user's own
// private regular file is neither read nor replaced; the clock is
// measured without it.
func TestClockUntrustedCache(t *testing.T) {
	s := openStore(t)
	p := filepath.Join(s.Dir(), clockFile)
	if err := os.WriteFile(p, []byte(`{"version":1,"clocks":{}}`), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	clocks.Clear()
	if c := s.Clock(); !c.Measured {
		t.Fatalf("Clock = %+v beside an untrusted cache, want a measured clock", c)
	}
	if b, _ := os.ReadFile(p); string(b) != `{"version":1,"clocks":{}}` {
		t.Errorf("the untrusted cache was replaced: %s", b)
	}
	clocks.Clear()
}

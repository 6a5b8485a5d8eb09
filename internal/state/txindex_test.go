package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// allocate runs AllocatePorts for id and returns the transactions its
// taken() was asked to read; of those, the ones in settle are marked
// settled, as the caller would after reading their records.
func allocate(t *testing.T, s *Store, id string, settle ...string) []string {
	t.Helper()
	var read []string
	_, err := s.AllocatePorts(t.Context(), id, func(ix *TxIndex) ([]int, error) {
		read = ix.Unsettled()
		for _, id := range settle {
			ix.Settled(id)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return read
}

func create(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.Create(id); err != nil {
			t.Fatal(err)
		}
	}
}

func wantRead(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("read the records of %q, want %q", got, want)
	}
}

// indexed builds a store whose index names a and b settled, with c open.
func indexed(t *testing.T) *Store {
	t.Helper()
	s := openStore(t)
	create(t, s, "a", "b", "c")
	wantRead(t, allocate(t, s, "c", "a", "b"), "a", "b", "c")
	wantRead(t, allocate(t, s, "c"), "c")
	return s
}

func TestTxIndexSkipsSettled(t *testing.T) {
	s := indexed(t)
	// A new transaction is read until found settled; the one allocating
	// is read too (its own taken() skips it), and never marked.
	create(t, s, "d")
	wantRead(t, allocate(t, s, "d", "d"), "c", "d")
	wantRead(t, allocate(t, s, "d"), "c", "d")
	// A removed transaction leaves the index.
	if err := s.RemoveTx("a"); err != nil {
		t.Fatal(err)
	}
	wantRead(t, allocate(t, s, "c"), "c", "d")
	if on := s.readTxIndex(); on["a"] || !on["b"] || len(on) != 1 {
		t.Fatalf("index after removing a = %v, want b alone", on)
	}
}

// TestTxIndexReusedID: gc removes a settled transaction and `--id` opens a
// new one under its id. Its allocation drops the id from the index, so
// the next open reads its records (and counts its ports) again.
func TestTxIndexReusedID(t *testing.T) {
	s := indexed(t)
	path := filepath.Join(s.Dir(), "tx", "a")
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	create(t, s, "a")
	allocate(t, s, "a")
	if s.readTxIndex()["a"] {
		t.Fatal("the index still names a settled after a new transaction a allocated its ports")
	}
	wantRead(t, allocate(t, s, "c"), "a", "c")
}

// TestTxIndexUntrusted: an index that is torn, edited, of another version,
// or not the user's private regular file is not read: every transaction's
// records are, and the index is written anew.
func TestTxIndexUntrusted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"missing", func(t *testing.T, path string) { os.Remove(path) }},
		{"torn", func(t *testing.T, path string) {
			data, _ := os.ReadFile(path)
			writeRaw(t, path, data[:len(data)/2])
		}},
		{"empty", func(t *testing.T, path string) { writeRaw(t, path, nil) }},
		{"edited", func(t *testing.T, path string) {
			// Still JSON, naming c settled too, but not matching its digest.
			on := txIndexFile{Version: txIndexVersion, Settled: []string{"a", "b", "c"}}
			on.Digest = txIndexFile{Version: txIndexVersion, Settled: []string{"a", "b"}}.seal()
			writeRaw(t, path, mustJSON(t, on))
		}},
		{"other version", func(t *testing.T, path string) {
			on := txIndexFile{Version: txIndexVersion + 1, Settled: []string{"a", "b", "c"}}
			on.Digest = on.seal()
			writeRaw(t, path, mustJSON(t, on))
		}},
		{"invalid id", func(t *testing.T, path string) {
			on := txIndexFile{Version: txIndexVersion, Settled: []string{"a", "../c"}}
			on.Digest = on.seal()
			writeRaw(t, path, mustJSON(t, on))
		}},
		{"group-writable", func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o620); err != nil {
				t.Fatal(err)
			}
		}},
		{"foreign", func(t *testing.T, path string) {
			data, _ := os.ReadFile(path)
			plantFile(t, path, 0o600, 12345)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink", func(t *testing.T, path string) {
			good := filepath.Join(t.TempDir(), "index")
			data, _ := os.ReadFile(path)
			writeRaw(t, good, data)
			os.Remove(path)
			symlink(t, good, path)
		}},
		{"directory", func(t *testing.T, path string) {
			os.Remove(path)
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := indexed(t)
			path := filepath.Join(s.Dir(), TxIndexFile)
			tc.plant(t, path)
			wantRead(t, allocate(t, s, "c", "a"), "a", "b", "c")
			if tc.name == "directory" {
				// Nothing can be written there: every pass reads every record.
				wantRead(t, allocate(t, s, "c"), "a", "b", "c")
				return
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Fatalf("index rewritten as %v, %v; want a private regular file", fi, err)
			}
			wantRead(t, allocate(t, s, "c"), "b", "c")
		})
	}
}

// TestTxIndexConcurrentPasses: two allocations at once, on two opens of
// the store (as two processes), run one after the other under the global
// lock: the second sees the first's port and what it added to the index.
// The second starts only once the first holds the lock, so the order is
// forced by the lock, not by timing.
func TestTxIndexConcurrentPasses(t *testing.T) {
	s1 := openStore(t)
	s2, err := Open(s1.Dir())
	if err != nil {
		t.Fatal(err)
	}
	create(t, s1, "a", "b", "old")
	inFirst, release := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		_, err := s1.AllocatePorts(t.Context(), "a", func(ix *TxIndex) ([]int, error) {
			close(inFirst)
			<-release
			ix.Settled("old")
			return nil, nil
		})
		firstDone <- err
	}()
	<-inFirst
	var secondRead []string
	var firstPort bool
	secondDone := make(chan error, 1)
	go func() {
		_, err := s2.AllocatePorts(t.Context(), "b", func(ix *TxIndex) ([]int, error) {
			secondRead = ix.Unsettled()
			tx, err := s2.Tx("a")
			if err != nil {
				return nil, err
			}
			_, firstPort, err = tx.PortBase()
			return nil, err
		})
		secondDone <- err
	}()
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil {
		t.Fatal(err)
	}
	if !firstPort {
		t.Fatal("the second allocation ran before the first recorded its port")
	}
	wantRead(t, secondRead, "a", "b")
	if on := s1.readTxIndex(); !on["old"] || len(on) != 1 {
		t.Fatalf("index = %v, want old alone", on)
	}
}

func writeRaw(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

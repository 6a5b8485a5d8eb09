package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/airlockdev/airlock/internal/state"
)

func settledIndexed(t testing.TB, s *Store) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir(), state.TxIndexFile))
	if err != nil {
		t.Fatal(err)
	}
	var ix struct{ Settled []string }
	if err := json.Unmarshal(data, &ix); err != nil {
		t.Fatal(err)
	}
	return ix.Settled
}

// TestOpenPortsWithIndex: an open skips the ports of settled transactions
// (and indexes them), never those of open ones, nor of one whose record
// cannot be read.
func TestOpenPortsWithIndex(t *testing.T) {
	base := newBaseDir(t, map[string]string{"f": "x"})
	s := newStore(t)
	open := func(id string) *Tx {
		t.Helper()
		tx, err := s.Open(t.Context(), OpenOptions{Base: base, Backend: "copy", ID: id})
		must(t, err)
		return tx
	}
	a := open("a")
	b := open("b")
	if _, err := b.Discard(t.Context(), DiscardOptions{}); err != nil {
		t.Fatal(err)
	}
	c := open("c")
	if c.Record().PortBase == a.Record().PortBase {
		t.Fatalf("c was given open a's ports %d", a.Record().PortBase)
	}
	if got := settledIndexed(t, s); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("index names %q settled, want b", got)
	}
	// c's record altered: it cannot be read, so its ports stay taken.
	rec := c.st.Path(recordFile)
	must(t, os.Chmod(rec, 0o600))
	data, err := os.ReadFile(rec)
	must(t, err)
	must(t, os.WriteFile(rec, data[:len(data)/2], 0o600))
	if _, err := s.Tx("c"); err == nil {
		t.Fatal("the altered record still loads")
	}
	d := open("d")
	for _, tx := range []*Tx{a, c} {
		if d.Record().PortBase == tx.Record().PortBase {
			t.Fatalf("d was given %s's ports %d", tx.ID(), tx.Record().PortBase)
		}
	}
	if got := settledIndexed(t, s); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("index names %q settled, want b", got)
	}
}

// BenchmarkOpen opens and discards a transaction over a small base in a
// state root that holds settled transactions already: an open's cost
// must not grow with them. BenchmarkOpen/pass is the part that did, the
// port allocation's pass over the transactions, alone.
func BenchmarkOpen(b *testing.B) {
	for _, settled := range []int{0, 300} {
		s, base := settledStore(b, settled)
		cycle := func(ctx context.Context) {
			tx, err := s.Open(ctx, OpenOptions{Base: base, Backend: "copy"})
			noErr(b, err)
			_, err = tx.Discard(ctx, DiscardOptions{})
			noErr(b, err)
		}
		b.Run("settled="+strconv.Itoa(settled), func(b *testing.B) {
			for b.Loop() {
				cycle(b.Context())
			}
		})
		b.Run("pass/settled="+strconv.Itoa(settled), func(b *testing.B) {
			id := "pass-" + strconv.Itoa(settled)
			_, err := s.st().Create(id)
			noErr(b, err)
			for b.Loop() {
				_, err := s.st().AllocatePorts(b.Context(), id, s.portsTaken)
				noErr(b, err)
			}
		})
	}
}

// settledStore is a state root holding n settled transactions over a base
// of 20 small files.
func settledStore(b *testing.B, n int) (*Store, string) {
	base := filepath.Join(b.TempDir(), "base")
	noErr(b, os.Mkdir(base, 0o755))
	for i := range 20 {
		noErr(b, os.WriteFile(filepath.Join(base, "f"+strconv.Itoa(i)), []byte("x"), 0o644))
	}
	s, err := OpenStore(filepath.Join(b.TempDir(), "state"))
	noErr(b, err)
	for range n {
		tx, err := s.Open(b.Context(), OpenOptions{Base: base, Backend: "copy"})
		noErr(b, err)
		_, err = tx.Discard(b.Context(), DiscardOptions{})
		noErr(b, err)
	}
	return s, base
}

func noErr(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// TestCreateTxRedrawsAGeneratedID: a generated id that another open drew
// in the same second is drawn again; a chosen one that is taken fails.
func TestCreateTxRedrawsAGeneratedID(t *testing.T) {
	s := newStore(t)
	must(t, s.ensure())
	if _, err := s.st().Create("20261202-041752-14f4"); err != nil {
		t.Fatal(err)
	}
	draws := []string{"20261202-041752-14f4", "20261202-041752-14f4", "20261202-041752-0b1e"}
	next := func() string { id := draws[0]; draws = draws[1:]; return id }
	tx, err := createTx(s.st(), "", next)
	if err != nil || tx.ID() != "20261202-041752-0b1e" {
		t.Fatalf("createTx = %v, %v; want the third draw", tx, err)
	}
	if _, err := createTx(s.st(), "20261202-041752-14f4", next); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("createTx of a taken chosen id = %v, want fs.ErrExist", err)
	}
	always := func() string { return "20261202-041752-14f4" }
	if _, err := createTx(s.st(), "", always); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("createTx whose every draw is taken = %v, want fs.ErrExist", err)
	}
}

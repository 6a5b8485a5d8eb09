package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/state"
)

// TestForgedStagedPathIsRefused (outside attack, round 2): a command that
// could rewrite its transaction's open record, naming the base (or any
// directory of its user) as the staged workspace and sealing it again,
// made the next gc remove that directory as the staged tree. A record
// whose staged path is not where airlock stages is refused, and gc and
// discard remove nothing through it.
func TestForgedStagedPathIsRefused(t *testing.T) {
	s := newStore(t)
	base := t.TempDir()
	must(t, os.WriteFile(filepath.Join(base, "thesis.tex"), []byte("years of work\n"), 0o644))
	tx, err := s.Open(context.Background(), OpenOptions{Base: base})
	must(t, err)
	rec := tx.Record()
	rec.Staged = Bytes(base)
	rec.Digest = ""
	d, err := rec.seal()
	must(t, err)
	rec.Digest = d
	b, err := json.Marshal(rec)
	must(t, err)
	must(t, os.WriteFile(tx.st.Path(recordFile), b, 0o600))

	_, err = s.Tx(tx.ID())
	var unsafe *state.UnsafeError
	if !errors.As(err, &unsafe) {
		t.Fatalf("loading the forged record: %v, want an UnsafeError", err)
	}
	s.GC(context.Background(), GCOptions{})
	if got, err := os.ReadFile(filepath.Join(base, "thesis.tex")); err != nil || string(got) != "years of work\n" {
		t.Fatalf("gc went through the forged record: thesis.tex = %q, %v", got, err)
	}
}

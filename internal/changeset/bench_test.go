package changeset

import (
	"context"
	"fmt"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
)

// BenchmarkDiff diffs a 60,000-entry tree with 10 changed files: the cost
// of the merge of manifests alone, stat facts deciding everything.
func BenchmarkDiff(b *testing.B) {
	const n = 60_000
	base := &manifest.Manifest{Entries: make([]manifest.Entry, 0, n)}
	for i := range n {
		base.Entries = append(base.Entries, manifest.Entry{
			Path: fmt.Sprintf("d%03d/f%05d.go", i/100, i), Kind: manifest.KindFile, Mode: 0o644,
			Size: int64(i), MtimeNs: 1, CtimeNs: 5_000_000_000, Ino: uint64(i + 1), Dev: 1,
		})
	}
	open := &manifest.Manifest{Entries: append([]manifest.Entry(nil), base.Entries...)}
	for i := range open.Entries {
		open.Entries[i].Ino += n
	}
	now := &manifest.Manifest{Entries: append([]manifest.Entry(nil), open.Entries...)}
	for i := 0; i < n; i += n / 10 {
		now.Entries[i].Size++
		now.Entries[i].CtimeNs++
	}
	in := Input{Base: base, StagedOpen: open, Staged: now}
	for b.Loop() {
		set, err := Diff(context.Background(), in)
		if err != nil {
			b.Fatal(err)
		}
		if len(set.Changes) != 10 {
			b.Fatalf("%d changes, want 10", len(set.Changes))
		}
	}
}

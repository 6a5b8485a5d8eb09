package airlock

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGCGrace: the zero GCOptions keep every settled transaction for its
// base's grace (gc_keep, else 7 days); OlderThan replaces it, 0 removing
// whatever may go; a named transaction goes whatever its age; the
// removal of a commit says that its undo went with it, and log then
// names it among those that can no longer be undone.
func TestGCGrace(t *testing.T) {
	ctx := context.Background()
	dur := func(d time.Duration) *time.Duration { return &d }
	commit := func(t *testing.T, s *Store, base, id string) {
		t.Helper()
		tx, err := s.Open(ctx, OpenOptions{Base: base, ID: id, Backend: "copy"})
		must(t, err)
		must(t, os.WriteFile(filepath.Join(tx.Path(), id+".txt"), []byte(id+"\n"), 0o644))
		res, err := tx.Commit(ctx, CommitOptions{})
		must(t, err)
		if res.Outcome != Committed {
			t.Fatalf("commit %s: %s", id, res.Outcome)
		}
	}
	items := func(t *testing.T, s *Store, o GCOptions) map[string]GCItem {
		t.Helper()
		its, _, err := s.GC(ctx, o)
		must(t, err)
		out := map[string]GCItem{}
		for _, it := range its {
			if !it.Pooled {
				out[it.ID] = it
			}
		}
		return out
	}
	tests := []struct {
		name    string
		config  string // the base's .airlock.toml; "" for none
		o       GCOptions
		removed []string
		grace   time.Duration // the grace a kept one waits for
	}{
		{"zero options keep for 7 days", "", GCOptions{}, nil, 7 * 24 * time.Hour},
		{"gc_keep is the grace", "gc_keep = \"2h\"\n", GCOptions{}, nil, 2 * time.Hour},
		{"gc_keep 0 keeps none", "gc_keep = \"0\"\n", GCOptions{}, []string{"c1", "c2"}, 0},
		{"older-than 0 over the default", "", GCOptions{OlderThan: dur(0)}, []string{"c1", "c2"}, 0},
		{"older-than over gc_keep 0", "gc_keep = \"0\"\n", GCOptions{OlderThan: dur(time.Hour)}, nil, time.Hour},
		{"named goes at once", "", GCOptions{IDs: []string{"c1"}}, []string{"c1"}, 0},
		{"named within older-than stays", "", GCOptions{IDs: []string{"c1"}, OlderThan: dur(time.Hour)}, nil, time.Hour},
		{"dry run", "", GCOptions{OlderThan: dur(0), DryRun: true}, []string{"c1", "c2"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			base := newBaseDir(t, map[string]string{"a.txt": "a\n"})
			commit(t, s, base, "c1")
			commit(t, s, base, "c2")
			if tt.config != "" {
				must(t, os.WriteFile(filepath.Join(base, ".airlock.toml"), []byte(tt.config), 0o644))
			}
			before := time.Now()
			got := items(t, s, tt.o)
			for _, id := range []string{"c1", "c2"} {
				it, looked := got[id]
				if !looked {
					if len(tt.o.IDs) > 0 && !slices.Contains(tt.o.IDs, id) {
						continue
					}
					t.Fatalf("gc did not look at %s: %+v", id, got)
				}
				want := slices.Contains(tt.removed, id)
				if it.Removed != want || it.UndoLost != want {
					t.Errorf("%s: removed %v, undo lost %v; want both %v (%s)", id, it.Removed, it.UndoLost, want, it.Reason)
				}
				if !want {
					// Kept for its grace: it ends a grace after it settled,
					// which was before this gc began.
					if it.GraceEnds.IsZero() || it.GraceEnds.After(before.Add(tt.grace)) || it.GraceEnds.Before(before.Add(tt.grace-time.Minute)) {
						t.Errorf("%s kept: grace ends %v, want within a minute before %v (%s)", id, it.GraceEnds, before.Add(tt.grace), it.Reason)
					}
				} else if !it.GraceEnds.IsZero() {
					t.Errorf("%s removed, yet its grace ends %v", id, it.GraceEnds)
				}
				_, err := os.Stat(filepath.Join(s.dir, "tx", id))
				if gone := os.IsNotExist(err); gone != (want && !tt.o.DryRun) {
					t.Errorf("%s: state gone %v after gc (dry run %v, removed %v)", id, gone, tt.o.DryRun, want)
				}
			}
			lg, err := s.Log(base)
			must(t, err)
			var wantGone []string
			if !tt.o.DryRun {
				for _, id := range []string{"c2", "c1"} { // newest first
					if slices.Contains(tt.removed, id) {
						wantGone = append(wantGone, id)
					}
				}
			}
			if !slices.Equal(lg.UndoGone, wantGone) || len(lg.Entries) != 2 {
				t.Errorf("log: %d entries, undo gone %v; want 2 entries, %v", len(lg.Entries), lg.UndoGone, wantGone)
			}
			for _, id := range wantGone {
				lr, err := s.LoggedReceipt(id)
				must(t, err)
				if lr.Base != base {
					t.Errorf("receipt of %s found in the chain of %s, want %s", id, lr.Base, base)
				}
				if _, err := os.Stat(lr.Path); err != nil {
					t.Errorf("receipt of %s: %v", id, err)
				}
			}
		})
	}
}

// TestGCBadGraceKeeps: a gc_keep gc cannot read keeps that base's
// settled transactions and is the error gc returns, naming the file and
// the key; another base's transactions go as their grace allows.
func TestGCBadGraceKeeps(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	bad := newBaseDir(t, map[string]string{"a.txt": "a\n"})
	good := newBaseDir(t, map[string]string{"a.txt": "a\n"})
	for id, base := range map[string]string{"b1": bad, "g1": good} {
		tx, err := s.Open(ctx, OpenOptions{Base: base, ID: id, Backend: "copy"})
		must(t, err)
		must(t, os.WriteFile(filepath.Join(tx.Path(), "n.txt"), []byte("n\n"), 0o644))
		_, err = tx.Commit(ctx, CommitOptions{})
		must(t, err)
	}
	cfg := filepath.Join(bad, ".airlock.toml")
	must(t, os.WriteFile(cfg, []byte("gc_keep = \"soon\"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(good, ".airlock.toml"), []byte("gc_keep = \"0\"\n"), 0o644))
	its, _, err := s.GC(ctx, GCOptions{})
	if err == nil || !strings.Contains(err.Error(), cfg+":1") || !strings.Contains(err.Error(), `key "gc_keep"`) {
		t.Fatalf("gc under a bad gc_keep: %v, want an error naming %s:1 and the key", err, cfg)
	}
	for _, it := range its {
		if it.Pooled {
			continue
		}
		if want := it.ID == "g1"; it.Removed != want {
			t.Errorf("%s: removed %v, want %v (%s)", it.ID, it.Removed, want, it.Reason)
		}
	}
}

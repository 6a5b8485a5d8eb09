package airlock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// lastChecked returns the newest "checked" event's detail.
func lastChecked(t *testing.T, tx *Tx) map[string]any {
	t.Helper()
	evs, err := tx.Events()
	must(t, err)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Event == eventChecked {
			return evs[i].Detail
		}
	}
	t.Fatal("no checked event in the log")
	return nil
}

// TestCheckIsADryRun: Check finds the refusal a commit would meet, and
// nothing about the base or the transaction changes; the commit that
// follows meets the same outcome.
func TestCheckIsADryRun(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		write  map[string]string // in the staged workspace
		drift  map[string]string // in the base, after open
		fifo   bool
		o      CommitOptions
		want   RefusalKind // "" for no refusal
		paths  []string
		reason string // a substring of the refusal's reason
	}{
		{name: "a plain change passes", write: map[string]string{"new": "n", "a": "a2"}},
		{name: "a protected path is refused", write: map[string]string{".envrc": "export X=1\n"}, want: ProtectedPathNotApproved, paths: []string{".envrc"}},
		{name: "approval lets a protected path pass", write: map[string]string{".envrc": "export X=1\n"}, o: CommitOptions{Approve: true}},
		{name: "a failing validator refuses", write: map[string]string{"bad": "b"}, o: CommitOptions{Validate: "test ! -e bad || { echo found bad; exit 3; }"}, want: ValidationFailed, reason: "found bad"},
		{name: "a passing validator sees the candidate", write: map[string]string{"good": "g"}, o: CommitOptions{Validate: "test -e good && test -e a"}},
		{name: "drift that cannot merge refuses", write: map[string]string{"a": "mine"}, drift: map[string]string{"a": "theirs"}, want: BaseDrift, paths: []string{"a"}},
		{name: "a FIFO refuses", fifo: true, want: UnsupportedEntry, paths: []string{"pipe"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := newBaseDir(t, map[string]string{"a": "a", "dir/b": "b"})
			tx, err := newStore(t).Open(ctx, OpenOptions{Base: base})
			must(t, err)
			writeTree(t, tx.Path(), c.write)
			if c.fifo {
				must(t, syscall.Mkfifo(filepath.Join(tx.Path(), "pipe"), 0o644))
			}
			writeTree(t, base, c.drift)
			before := pathsDigest(t, base, []string{"a", "new", ".envrc", "bad", "good", "dir/b"})

			r, err := tx.Check(ctx, c.o)
			must(t, err)
			if c.want == "" && r != nil {
				t.Fatalf("Check refused: %v", r)
			}
			if c.want != "" {
				if r == nil || r.Kind != c.want {
					t.Fatalf("Check = %v, want a %s refusal", r, c.want)
				}
				if c.paths != nil && !slices.Equal(r.Paths, c.paths) {
					t.Errorf("refused paths %q, want %q", r.Paths, c.paths)
				}
				if !strings.Contains(r.Reason, c.reason) {
					t.Errorf("reason %q does not say %q", r.Reason, c.reason)
				}
			}
			if after := pathsDigest(t, base, []string{"a", "new", ".envrc", "bad", "good", "dir/b"}); after != before {
				t.Error("Check changed the base")
			}
			if st, _ := tx.Status(); st != StatusOpen {
				t.Errorf("status after Check %s, want open", st)
			}
			if _, err := tx.Receipt(); err == nil {
				t.Error("Check wrote a receipt")
			}
			d := lastChecked(t, tx)
			if d["refusal"] != string(c.want) || d["diff_digest"] == "" {
				t.Errorf("checked event %v, want refusal %q and a diff digest", d, c.want)
			}
			// A check keeps nothing of a commit's in the transaction's
			// state: no frozen change set, no candidate, no scratch.
			entries, err := os.ReadDir(tx.StateDir())
			must(t, err)
			for _, e := range entries {
				if n := e.Name(); n == changesDir || n == candidateDir || strings.HasPrefix(n, "check-") {
					t.Errorf("Check left %s in the transaction's state", n)
				}
			}

			res, err := tx.Commit(ctx, c.o)
			var cr *Refusal
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Check passed but Commit failed: %v", err)
			case c.want == "" && res.Outcome != Committed:
				t.Fatalf("Check passed but Commit said %s", res.Outcome)
			case c.want != "" && (!errors.As(err, &cr) || cr.Kind != c.want):
				t.Fatalf("Check refused %s but Commit returned %v", c.want, err)
			}
		})
	}
}

func TestCheckRefusesSettled(t *testing.T) {
	ctx := context.Background()
	tx, err := newStore(t).Open(ctx, OpenOptions{Base: newBaseDir(t, map[string]string{"a": "a"})})
	must(t, err)
	_, err = tx.Discard(ctx, DiscardOptions{})
	must(t, err)
	if _, err := tx.Check(ctx, CommitOptions{}); err == nil || !strings.Contains(err.Error(), "discarded") {
		t.Fatalf("Check of a discarded transaction: %v, want an error saying it was discarded", err)
	}
}

// TestCheckKeepsACommitsState: a check of a refused transaction leaves the
// change set its commit froze exactly as it was.
func TestCheckKeepsACommitsState(t *testing.T) {
	ctx := context.Background()
	base := newBaseDir(t, map[string]string{"a": "a"})
	tx, err := newStore(t).Open(ctx, OpenOptions{Base: base})
	must(t, err)
	writeTree(t, tx.Path(), map[string]string{".envrc": "x", "b": "b"})
	_, err = tx.Commit(ctx, CommitOptions{})
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("commit: %v, want a refusal", err)
	}
	frozen := readFile(t, tx.st.Path(changeSetFile))
	writeTree(t, tx.Path(), map[string]string{"c": "c"})
	r, err = tx.Check(ctx, CommitOptions{Approve: true})
	if err != nil || r != nil {
		t.Fatalf("Check with approval: %v, %v", r, err)
	}
	if got := readFile(t, tx.st.Path(changeSetFile)); got != frozen {
		t.Error("Check rewrote the change set the refused commit froze")
	}
	if st, _ := tx.Status(); st != StatusRefused {
		t.Errorf("status %s, want refused still", st)
	}
}

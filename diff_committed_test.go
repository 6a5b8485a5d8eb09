package airlock_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock"
)

// TestCommittedDiffAfterObjectsMoved: a commit of many new files may move
// its frozen objects into the base (journal.Apply). Its diff still shows
// what it wrote, read from the base while the base holds those bytes; once
// the base has changed a file since, the diff says that content is no
// longer kept, never shows the new content as the commit's.
func TestCommittedDiffAfterObjectsMoved(t *testing.T) {
	top := t.TempDir()
	base := filepath.Join(top, "base")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := airlock.OpenStore(filepath.Join(top, "state"))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := st.Open(t.Context(), airlock.OpenOptions{Base: base, Backend: "copy"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		p := filepath.Join(tx.Path(), "pkg", fmt.Sprintf("f%02d.js", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("module.exports = %d;\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tx.Commit(t.Context(), airlock.CommitOptions{})
	if err != nil || res.Outcome != airlock.Committed || res.Added != n {
		t.Fatalf("commit: %v, %+v", err, res)
	}
	objects, _ := filepath.Glob(filepath.Join(tx.StateDir(), "changes", "objects", "*"))
	t.Logf("%d of %d objects left in the store", len(objects), n)

	var out bytes.Buffer
	if _, err := tx.Diff(t.Context(), &out, airlock.DiffPatch); err != nil {
		t.Fatalf("diff of the committed transaction: %v", err)
	}
	for i := range n {
		if want := fmt.Sprintf("+module.exports = %d;", i); !strings.Contains(out.String(), want) {
			t.Fatalf("the committed diff lacks %q:\n%s", want, out.String())
		}
	}

	if err := os.WriteFile(filepath.Join(base, "pkg", "f07.js"), []byte("edited since\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	_, err = tx.Diff(t.Context(), &out, airlock.DiffPatch)
	if strings.Contains(out.String(), "edited since") {
		t.Fatalf("the committed diff shows the base's later edit as the commit's:\n%s", out.String())
	}
	if len(objects) == 0 && (err == nil || !strings.Contains(err.Error(), "no longer kept")) {
		t.Fatalf("diff after the base changed a moved file: %v, want it to say the content is no longer kept", err)
	}
}

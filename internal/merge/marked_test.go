package merge

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// markedByGit runs `git merge-file -p --diff3` with the labels, and returns
// its output and how many conflicts its exit code counts.
func (o *oracle) markedByGit(t testing.TB, ancestor, ours, theirs []byte, l Labels) ([]byte, int) {
	t.Helper()
	for name, b := range map[string][]byte{"base": ancestor, "ours": ours, "theirs": theirs} {
		if err := os.WriteFile(filepath.Join(o.dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("git", "merge-file", "-p", "--diff3", "-L", l.Ours, "-L", l.Ancestor, "-L", l.Theirs, "ours", "base", "theirs")
	cmd.Dir, cmd.Env = o.dir, o.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), 0
	case errors.As(err, &exit) && exit.ExitCode() > 0 && exit.ExitCode() < 128:
		return stdout.Bytes(), exit.ExitCode()
	}
	t.Fatalf("git merge-file --diff3 failed: %v: %s", err, stderr.Bytes())
	return nil, 0
}

// TestMarkedMatchesGit holds Marked to git merge-file --diff3, byte for
// byte and conflict for conflict, on the generated versions TestTextMatchesGit
// uses (CRLF, mixed endings and missing final newlines among them).
func TestMarkedMatchesGit(t *testing.T) {
	o := newOracle(t)
	l := Labels{Ours: "transaction tx-1", Ancestor: "base at open", Theirs: "base now"}
	const cases = 600
	r := rand.New(rand.NewPCG(3, 4))
	var marked int
	for i := range cases {
		anc, ours, theirs := genVersions(r)
		got, n, err := Marked(anc, ours, theirs, l)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want, wantN := o.markedByGit(t, anc, ours, theirs, l)
		if n != wantN || !bytes.Equal(got, want) {
			t.Errorf("case %d: %d conflicts, git %d\nancestor %q\nours     %q\ntheirs   %q\ngot      %q\ngit      %q", i, n, wantN, anc, ours, theirs, got, want)
		}
		if n > 0 {
			marked++
		}
	}
	if marked < cases/5 {
		t.Errorf("only %d of %d cases had conflicts: the comparison proves little", marked, cases)
	}
}

func TestMarked(t *testing.T) {
	l := Labels{Ours: "ours", Ancestor: "anc", Theirs: "theirs"}
	got, n, err := Marked([]byte("a\nb\nc\n"), []byte("a\nB1\nc\n"), []byte("a\nB2\nc\n"), l)
	if err != nil {
		t.Fatal(err)
	}
	want := "a\n<<<<<<< ours\nB1\n||||||| anc\nb\n=======\nB2\n>>>>>>> theirs\nc\n"
	if n != 1 || string(got) != want {
		t.Errorf("Marked = %d, %q; want 1, %q", n, got, want)
	}
	if _, _, err := Marked([]byte("a\x00"), []byte("b"), []byte("c"), l); !errors.Is(err, ErrNotText) {
		t.Errorf("Marked of binary content: err = %v, want ErrNotText", err)
	}
}

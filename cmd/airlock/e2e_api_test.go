package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EOpenCommitDiscard: the open / commit / discard flow a harness
// drives without `run`.
func TestE2EOpenCommitDiscard(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n"), "d/g": F(0o644, "g\n")})
	before := snapshot(t, x.base, nil)

	r := x.airlock("open", "--workdir", x.base)
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("open printed %d lines, want id and path\n%s", len(lines), r)
	}
	id1, path1 := lines[0], lines[1]
	if !regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`).MatchString(id1) {
		t.Errorf("open printed id %q", id1)
	}
	wantTree(t, "staged workspace at open", before, snapshot(t, path1, nil))

	r = x.airlock("open", "--workdir", x.base, "--json")
	wantCode(t, r, 0)
	var o struct {
		ID   string `json:"id"`
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil || o.ID == "" || o.Path == "" {
		t.Fatalf("open --json: %v %+v\n%s", err, o, r)
	}
	if o.ID == id1 || o.Path == path1 {
		t.Errorf("two opens share an id or a path: %s %s", o.ID, o.Path)
	}

	writeFile(t, filepath.Join(path1, "new.txt"), "new\n")
	writeFile(t, filepath.Join(path1, "f"), "f edited\n")
	if err := os.RemoveAll(filepath.Join(path1, "d")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(o.Path, "other.txt"), "from the second transaction\n")
	wantTree(t, "base while transactions are open", before, snapshot(t, x.base, nil))

	r = x.airlock("commit", id1)
	wantCode(t, r, 0)
	// d and d's one file went: one deleted, as git counts it.
	wantBlock(t, r, map[string]string{"tx": id1, "outcome": "committed", "added": "1", "modified": "1", "deleted": "1"})
	want := tree{"f": F(0o644, "f edited\n"), "new.txt": F(0o644, "new\n")}
	wantTree(t, "base after commit", want, snapshot(t, x.base, nil))
	if testbin.Exists(path1) {
		t.Errorf("staged workspace %s is still there after the commit", path1)
	}

	r = x.airlock("discard", o.ID)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"tx": o.ID, "outcome": "discarded"})
	wantTree(t, "base after discard", want, snapshot(t, x.base, nil))
	if testbin.Exists(o.Path) {
		t.Errorf("staged workspace %s is still there after the discard", o.Path)
	}

	r = x.airlock("discard", id1)
	wantCode(t, r, 125)
	if !strings.Contains(r.Stderr, id1) {
		t.Errorf("discarding a committed transaction: the message does not name it\n%s", r)
	}
	wantTree(t, "base after discarding a committed transaction", want, snapshot(t, x.base, nil))
	r = x.airlock("commit", id1)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"tx": id1, "outcome": "committed"})
	wantTree(t, "base after committing again", want, snapshot(t, x.base, nil))
}

// TestE2EReceipts: --receipt writes the same bytes as the state's receipt,
// successive commits chain, and verify catches every edit.
func TestE2EReceipts(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	out := testbin.RealDir(t)

	r1 := x.airlock("run", "--workdir", x.base, "--id", "rc1", "--receipt", filepath.Join(out, "r1.json"), "--", "sh", "-c", `printf 'one\n' > f`)
	wantCode(t, r1, 0)
	r2 := x.airlock("run", "--workdir", x.base, "--id", "rc2", "--receipt", filepath.Join(out, "r2.json"), "--", "sh", "-c", `printf 'two\n' > f; printf 'n\n' > n`)
	wantCode(t, r2, 0)
	for copied, r := range map[string]result{"r1.json": r1, "r2.json": r2} {
		if a, b := testbin.ReadFile(t, filepath.Join(out, copied)), testbin.ReadFile(t, r.Settle["receipt"]); a != b {
			t.Errorf("--receipt copy %s differs from %s", copied, r.Settle["receipt"])
		}
	}
	var rc1, rc2 map[string]any
	if err := json.Unmarshal([]byte(testbin.ReadFile(t, filepath.Join(out, "r1.json"))), &rc1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(testbin.ReadFile(t, filepath.Join(out, "r2.json"))), &rc2); err != nil {
		t.Fatal(err)
	}
	if rc2["previous"] != rc1["digest"] || rc1["digest"] == nil {
		t.Errorf("the second receipt's previous %v is not the first's digest %v", rc2["previous"], rc1["digest"])
	}
	if rc1["base_digest"] == rc1["result_digest"] {
		t.Errorf("a commit's receipt has base_digest == result_digest")
	}
	for _, k := range []string{"base_digest", "result_digest", "diff_digest", "digest"} {
		if s, _ := rc1[k].(string); !digestRE.MatchString(s) {
			t.Errorf("receipt %s = %v", k, rc1[k])
		}
	}

	for _, arg := range []string{"rc1", "rc2", filepath.Join(out, "r1.json"), r2.Settle["receipt"]} {
		if v := x.airlock("receipt", "verify", arg); v.Code != 0 || !strings.HasPrefix(v.Stdout, "ok ") {
			t.Errorf("receipt verify %s: %s", arg, v)
		}
	}

	// Every member, changed or removed, breaks verification.
	data := []byte(testbin.ReadFile(t, filepath.Join(out, "r2.json")))
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	if len(obj) < 20 {
		t.Fatalf("receipt has only %d members", len(obj))
	}
	for k, v := range obj {
		for _, how := range []string{"changed", "removed"} {
			t.Run(how+" "+k, func(t *testing.T) {
				m := map[string]json.RawMessage{}
				for k2, v2 := range obj {
					m[k2] = v2
				}
				if how == "removed" {
					delete(m, k)
				} else {
					m[k] = tamper(t, v)
				}
				b, err := json.MarshalIndent(m, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				f := filepath.Join(testbin.RealDir(t), "tampered.json")
				writeFile(t, f, string(b))
				r := x.airlock("receipt", "verify", f)
				if r.Code != 1 || !strings.Contains(r.Stderr, "invalid") {
					t.Errorf("receipt with %s %s: %s", how, k, r)
				}
				if len(strings.TrimSpace(r.Stderr)) < len("airlock: receipt x is invalid: y") {
					t.Errorf("no reason given: %s", r)
				}
			})
		}
	}
	// Re-encoding without an edit keeps it valid: the tampering above is
	// what verify caught, not the formatting.
	b, _ := json.Marshal(obj)
	f := filepath.Join(out, "reencoded.json")
	writeFile(t, f, string(b))
	if v := x.airlock("receipt", "verify", f); v.Code != 0 {
		t.Errorf("a re-encoded, unedited receipt fails verification: %s", v)
	}
	if bytes.Equal(b, data) {
		t.Errorf("re-encoding did not change the formatting; the check above proves nothing")
	}
}

// tamper returns a different JSON value of the same type where it can.
func tamper(t *testing.T, v json.RawMessage) json.RawMessage {
	t.Helper()
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		t.Fatal(err)
	}
	var out any
	switch y := x.(type) {
	case string:
		if digestRE.MatchString(y) {
			last := y[len(y)-1]
			repl := byte('0')
			if last == '0' {
				repl = '1'
			}
			out = y[:len(y)-1] + string(repl)
		} else {
			out = y + "x"
		}
	case json.Number:
		n, err := y.Int64()
		if err != nil {
			t.Fatalf("number %s: %v", y, err)
		}
		out = n + 1
	case bool:
		out = !y
	case nil:
		out = "x"
	case []any:
		out = append(y, "x")
	case map[string]any:
		y["x"] = "y"
		out = y
	default:
		t.Fatalf("unexpected JSON value %s", v)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package main_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The --json outputs are API (docs/json.md): these golden tests pin their
// field names and structure. Run `go test ./cmd/airlock -run TestE2EJSON
// -update` to rewrite testdata/*.golden after a deliberate change, and
// update docs/json.md with it.

var update = flag.Bool("update", false, "rewrite cmd/airlock/testdata/*.golden from this run")

var (
	timeRE       = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	anyDigestRE  = regexp.MustCompile(`sha256:[0-9a-f]{64}`)
	hexNameRE    = regexp.MustCompile(`/bases/[0-9a-z-]+/`)
	variableNums = map[string]bool{"pid": true, "port_base": true, "base_device": true, "base_inode": true}
)

// normalise re-encodes a JSON document with the values that change from
// run to run replaced by placeholders: times, digests, pids, ports, device
// and inode numbers, file system identities, the scenario's directories,
// and free-text reasons.
// Object members come out sorted, so the golden pins names and structure,
// not member order.
func (x *h) normalise(raw string) string {
	x.t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		x.t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	if dec.More() {
		x.t.Fatalf("more than one JSON value:\n%s", raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x.norm("", v)); err != nil {
		x.t.Fatal(err)
	}
	return buf.String()
}

func (x *h) norm(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = x.norm(k, e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = x.norm(key, e)
		}
		return v
	case json.Number:
		if variableNums[key] && v.String() != "0" {
			return "<" + strings.ToUpper(key) + ">"
		}
		return v
	case string:
		if key == "reason" && v != "" {
			return "<REASON>"
		}
		if key == "base_fs" && v != "" {
			return "<BASE_FS>"
		}
		if timeRE.MatchString(v) {
			return "<TIME>"
		}
		s := strings.ReplaceAll(v, x.state, "$STATE")
		s = strings.ReplaceAll(s, x.base, "$BASE")
		s = anyDigestRE.ReplaceAllString(s, "sha256:<DIGEST>")
		return hexNameRE.ReplaceAllString(s, "/bases/<BASE-ID>/")
	}
	return v
}

// golden compares a normalised --json output with testdata/NAME.golden.
func (x *h) golden(name string, r result) {
	x.t.Helper()
	got := x.normalise(r.Stdout)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			x.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			x.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		x.t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		x.t.Errorf("%s: the output of airlock %q differs from the golden file (if the change is deliberate: -update, and docs/json.md)\n--- got\n%s--- want\n%s",
			path, r.Args, got, want)
	}
}

// TestE2EJSON pins every --json output: open, list, show, commit and log,
// over transactions that are open, refused and committed.
func TestE2EJSON(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f.txt": F(0o644, "one\ntwo\n"), "p.txt": F(0o644, "protected\n"), "gone.txt": F(0o644, "bye\n")})

	r := x.airlock("open", "--workdir", x.base, "--id", "gold-open", "--backend", "copy", "--json")
	wantCode(t, r, 0)
	x.golden("open", r)
	var o struct {
		Path string `json:"path"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &o))
	writeFile(t, filepath.Join(o.Path, "f.txt"), "one\ntwo, edited\n")
	writeFile(t, filepath.Join(o.Path, "new.txt"), "new\n")
	must(t, os.Remove(filepath.Join(o.Path, "gone.txt")))

	sr := x.openTx("gold-refused", "--backend", "copy", "--protect", "p.txt")
	writeFile(t, filepath.Join(sr, "p.txt"), "edited without approval\n")
	r = x.airlock("commit", "gold-refused", "--json")
	wantCode(t, r, 75)
	x.golden("commit-refused", r)

	sc := x.openTx("gold-commit", "--backend", "copy")
	writeFile(t, filepath.Join(sc, "c.txt"), "committed\n")
	r = x.airlock("commit", "gold-commit", "--json")
	wantCode(t, r, 0)
	x.golden("commit", r)
	r = x.airlock("commit", "gold-commit", "--json")
	wantCode(t, r, 0)
	x.golden("commit-repeat", r)

	r = x.airlock("list", "--json")
	wantCode(t, r, 0)
	x.golden("list", r)
	r = x.airlock("list", "--all", "--json")
	wantCode(t, r, 0)
	x.golden("list-all", r)
	for _, id := range []string{"open", "refused", "commit"} {
		r = x.airlock("show", "gold-"+id, "--json")
		wantCode(t, r, 0)
		x.golden("show-"+id, r)
	}

	wantCode(t, x.airlock("commit", "gold-open", "--quiet"), 0)
	r = x.airlock("log", "--workdir", x.base, "--json")
	wantCode(t, r, 0)
	x.golden("log", r)

	// An empty list is [], not null.
	y := newH(t)
	r = y.airlock("list", "--json")
	wantCode(t, r, 0)
	if strings.TrimSpace(r.Stdout) != "[]" {
		t.Errorf("list --json with no transactions printed %q, want []", r.Stdout)
	}
}

// TestE2EJSONRawPaths: a refused path that is not valid UTF-8 keeps its
// exact bytes in every --json output, in the receipt's form
// ({"base64": ...}), instead of turning into U+FFFD.
func TestE2EJSONRawPaths(t *testing.T) {
	x := newH(t)
	name := "caf\xe9.txt"
	build(t, x.base, tree{name: F(0o644, "a\nb\nc\n")})
	s1, s2 := x.openTx("n1"), x.openTx("n2")
	writeFile(t, filepath.Join(s1, name), "a\nb by n1\nc\n")
	writeFile(t, filepath.Join(s2, name), "a\nb by n2\nc\n")
	wantCode(t, x.airlock("commit", "n1"), 0)
	r := x.airlock("commit", "n2", "--json", "--quiet")
	wantCode(t, r, 75)
	const want = `[{"base64":"Y2Fm6S50eHQ="}]`
	compact := func(what string, raw json.RawMessage) {
		t.Helper()
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil || b.String() != want {
			t.Errorf("%s: refused_paths = %s, want %s (%v)", what, raw, want, err)
		}
	}
	var res struct {
		RefusedPaths json.RawMessage `json:"refused_paths"`
		Receipt      struct {
			RefusedPaths json.RawMessage `json:"refused_paths"`
		} `json:"receipt"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &res))
	compact("commit --json receipt", res.Receipt.RefusedPaths)
	compact("commit --json", res.RefusedPaths)

	r = x.airlock("show", "n2", "--json")
	wantCode(t, r, 0)
	var in struct {
		RefusedPaths json.RawMessage `json:"refused_paths"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &in))
	compact("show --json", in.RefusedPaths)

	r = x.airlock("list", "--json")
	wantCode(t, r, 0)
	var l []struct {
		RefusedPaths json.RawMessage `json:"refused_paths"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &l))
	if len(l) != 1 {
		t.Fatalf("list --json: %s", r.Stdout)
	}
	compact("list --json", l[0].RefusedPaths)

	r = x.airlock("show", "n2")
	if !strings.Contains(r.Stdout, "refusal:   MergeConflict caf%E9.txt") {
		t.Errorf("show does not name the refused path with its byte escaped\n%s", r)
	}
}

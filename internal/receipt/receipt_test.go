package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/receipt.golden")

func digestOfText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sample is a receipt as settle fills it in, before sealing.
func sample() *Receipt {
	code := 0
	return &Receipt{
		TxID:       "20261129-190233-4f2a",
		Base:       "/home/dev/project",
		BaseDevice: 2049, BaseInode: 131074,
		Backend:   "copy",
		Command:   []string{"sh", "-c", "echo <hi> & make"},
		StartedAt: time.Date(2026, 11, 29, 19, 2, 33, 123456789, time.UTC),
		EndedAt:   time.Date(2026, 11, 29, 19, 2, 40, 0, time.UTC),
		ExitCode:  &code,
		Outcome:   "committed",
		Added:     3, Modified: 1, Deleted: 0,
		ExcludedSelectors: 3, ProtectedSelectors: 4,
		BaseDigest:   digestOfText("base"),
		ResultDigest: digestOfText("result"),
		DiffDigest:   digestOfText("diff"),
		Previous:     digestOfText("previous receipt"),
	}
}

func seal(t *testing.T, r *Receipt) []byte {
	t.Helper()
	data, err := r.Seal()
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return data
}

// rawOf parses receipt bytes the way a third party would.
func rawOf(t *testing.T, data []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// encode writes a receipt object with encoding/json: keys sorted, compact,
// so in a different order and spacing from what Seal writes.
func encode(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reseal recomputes the digest after an edit: a forger who knows the rule
// can always do this, so the member checks must catch what is wrong.
func reseal(t *testing.T, m map[string]any) []byte {
	t.Helper()
	d, err := digestOf(m)
	if err != nil {
		t.Fatal(err)
	}
	m["digest"] = d
	return encode(t, m)
}

func TestSealVerifyRoundTrip(t *testing.T) {
	nonUTF8 := sample()
	nonUTF8.Base = "/srv/caf\xe9"
	nonUTF8.Command = []string{"touch", "\xff\xfe name", ""}
	nonUTF8.ExitCode = nil
	refused := sample()
	refused.Outcome, refused.Refusal = "refused", "ProtectedPathNotApproved"
	refused.RefusedPaths = []string{".envrc", "bad\xffname"}
	refused.NotTransactional = append(append([]string{}, NotTransactional...), "clock")
	noChanges := sample()
	noChanges.Outcome, noChanges.Added, noChanges.Modified = "no_changes", 0, 0
	noChanges.Command, noChanges.Previous = nil, ""
	for name, r := range map[string]*Receipt{"committed": sample(), "non-utf8 names": nonUTF8, "refused": refused, "no changes": noChanges} {
		t.Run(name, func(t *testing.T) {
			data := seal(t, r)
			if r.Schema != Schema || !reflect.DeepEqual(r.NotTransactional[:4], NotTransactional) {
				t.Errorf("Seal did not fill in schema and disclaimer: %q %q", r.Schema, r.NotTransactional)
			}
			if !strings.HasPrefix(r.Digest, "sha256:") || !bytes.HasSuffix(data, []byte("}\n")) {
				t.Errorf("digest %q, file ends %q", r.Digest, data[len(data)-3:])
			}
			got, err := Verify(data)
			if err != nil {
				t.Fatalf("Verify of a sealed receipt: %v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, r) {
				t.Errorf("round trip changed the receipt:\n got %+v\nwant %+v", got, r)
			}
			path := filepath.Join(t.TempDir(), "receipt.json")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			loaded, raw, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, data) || !reflect.DeepEqual(loaded, r) {
				t.Errorf("Load returned something else than was sealed")
			}
			// MarshalJSON writes the same receipt in compact form.
			compact, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(compact); err != nil {
				t.Errorf("Verify(json.Marshal(receipt)): %v", err)
			}
			var back Receipt
			if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(&back, r) {
				t.Errorf("UnmarshalJSON: %v\n got %+v\nwant %+v", err, back, r)
			}
		})
	}
}

// The digest rule is documented so that others can recompute it; check it
// with encoding/json as the canonical encoder, which matches the rule for
// strings without control characters.
func TestDigestFollowsTheDocumentedRule(t *testing.T) {
	r := sample()
	data := seal(t, r)
	m := rawOf(t, data)
	delete(m, "digest")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	canon := strings.TrimSuffix(b.String(), "\n")
	if !strings.Contains(canon, `"echo <hi> & make"`) || strings.Contains(canon, ", ") {
		t.Fatalf("not the documented canonical form: %s", canon)
	}
	if want := digestOfText(canon); r.Digest != want {
		t.Errorf("digest %s, want sha256 of %s = %s", r.Digest, canon, want)
	}
}

func TestCanonicalStrings(t *testing.T) {
	got := string(appendString(nil, "a\"\\\b\t\n\f\r\x01\x1f\x7f</>&\u2028é"))
	want := `"a\"\\\b\t\n\f\r\u0001\u001f` + "\x7f</>&\u2028é" + `"`
	if got != want {
		t.Errorf("appendString = %s, want %s", got, want)
	}
	m := map[string]any{"b": json.Number("1.0"), "a": []any{nil, true, false, "x"}, "B": map[string]any{}, "é": "", "z": json.Number("-0")}
	c, err := appendCanonical(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"B":{},"a":[null,true,false,"x"],"b":1.0,"z":-0,"é":""}`; string(c) != want {
		t.Errorf("canonical = %s, want %s", c, want)
	}
}

func TestVerifyDetectsEveryEdit(t *testing.T) {
	data := seal(t, sample())
	base := rawOf(t, data)
	for key := range base {
		if key == "digest" {
			continue
		}
		t.Run("flip "+key, func(t *testing.T) {
			m := rawOf(t, data)
			switch v := m[key].(type) {
			case string:
				m[key] = v + "x"
			case json.Number:
				m[key] = json.Number("1" + string(v))
			case bool:
				m[key] = !v
			case nil:
				m[key] = json.Number("1")
			case []any:
				m[key] = append(v, "x")
			default:
				t.Fatalf("no edit for %T", v)
			}
			expectInvalid(t, encode(t, m), mismatchOrSchema(key))
		})
		t.Run("remove "+key, func(t *testing.T) {
			m := rawOf(t, data)
			delete(m, key)
			expectInvalid(t, encode(t, m), mismatchOrSchema(key))
		})
	}
	t.Run("add a member", func(t *testing.T) {
		m := rawOf(t, data)
		m["note"] = "all good"
		expectInvalid(t, encode(t, m), "digest mismatch")
	})
	t.Run("change a list item", func(t *testing.T) {
		m := rawOf(t, data)
		m["command"].([]any)[2] = "rm -rf /"
		expectInvalid(t, encode(t, m), "digest mismatch")
	})
	t.Run("drop a disclaimer token", func(t *testing.T) {
		m := rawOf(t, data)
		m["not_transactional"] = m["not_transactional"].([]any)[1:]
		expectInvalid(t, encode(t, m), "digest mismatch")
	})
	t.Run("spell a number differently", func(t *testing.T) {
		expectInvalid(t, bytes.Replace(data, []byte(`"added": 3`), []byte(`"added": 3.0`), 1), "digest mismatch")
	})
	t.Run("change the digest", func(t *testing.T) {
		m := rawOf(t, data)
		m["digest"] = digestOfText("other")
		expectInvalid(t, encode(t, m), "digest mismatch")
	})
}

// mismatchOrSchema is the error an edit to member key gives: the schema is
// checked first, since it says how to compute the digest.
func mismatchOrSchema(key string) string {
	if key == "schema" {
		return "schema"
	}
	return "digest mismatch"
}

func TestVerifyIgnoresFormatting(t *testing.T) {
	data := seal(t, sample())
	m := rawOf(t, data)
	// Members in reverse order, tabs and newlines between tokens, and a
	// string written with \u escapes.
	var b strings.Builder
	b.WriteString("\n{\t")
	for i := len(members) - 1; i >= 0; i-- {
		k := members[i]
		v, err := json.Marshal(m[k])
		if err != nil {
			t.Fatal(err)
		}
		if k == "backend" {
			v = []byte(`"\u0063\u006fpy"`)
		}
		b.WriteString(`"` + k + "\"\n:\t" + string(v))
		if i > 0 {
			b.WriteString(",\r\n ")
		}
	}
	b.WriteString("}\n\n")
	for name, text := range map[string][]byte{"reordered and respaced": []byte(b.String()), "sorted and compact": encode(t, m)} {
		t.Run(name, func(t *testing.T) {
			r, err := Verify(text)
			if err != nil {
				t.Fatalf("Verify: %v\n%s", err, text)
			}
			if r.Backend != "copy" || r.Digest != m["digest"] {
				t.Errorf("read back %q %q", r.Backend, r.Digest)
			}
		})
	}
}

func expectInvalid(t *testing.T, data []byte, want string) {
	t.Helper()
	r, err := Verify(data)
	if err == nil {
		t.Fatalf("Verify accepted an edited receipt (tx %q):\n%s", r.TxID, data)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if !IsInvalid(err) {
		t.Errorf("IsInvalid(%v) = false", err)
	}
}

// TestVerifyRejectsForgedReceipts edits a member and recomputes the digest,
// as anyone can: the member checks must still refuse.
func TestVerifyRejectsForgedReceipts(t *testing.T) {
	nonUTF8 := sample()
	nonUTF8.Base = "/srv/caf\xe9"
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"unknown member", func(m map[string]any) { m["extra"] = true }, `member "extra" is not part of airlock.receipt/v1`},
		{"missing tx", func(m map[string]any) { delete(m, "tx") }, `member "tx" is missing`},
		{"missing counts", func(m map[string]any) { delete(m, "deleted") }, `member "deleted" is missing`},
		{"bad tx", func(m map[string]any) { m["tx"] = "../x" }, `member "tx" is "../x", not a transaction id`},
		{"dot-dot tx", func(m map[string]any) { m["tx"] = ".." }, `member "tx" is "..", not a transaction id`},
		{"relative base", func(m map[string]any) { m["base"] = "project" }, `member "base" is "project", not an absolute path`},
		{"base as base64 of text", func(m map[string]any) { m["base"] = map[string]any{"base64": "L3NydiB4"} }, "UTF-8 text"},
		{"base as other object", func(m map[string]any) { m["base"] = map[string]any{"hex": "2f"} }, `not a path`},
		{"empty backend", func(m map[string]any) { m["backend"] = "" }, `member "backend" is empty`},
		{"null command", func(m map[string]any) { m["command"] = nil }, `member "command" is null, not a list`},
		{"numeric argv", func(m map[string]any) { m["command"] = []any{json.Number("1")} }, `item 0 is the number 1`},
		{"outcome", func(m map[string]any) { m["outcome"] = "won" }, `member "outcome" is "won", not one of committed, discarded, refused, no_changes`},
		{"refusal without refused", func(m map[string]any) { m["refusal"] = "BaseDrift" }, `but the outcome is committed`},
		{"refused without refusal", func(m map[string]any) { m["outcome"] = "refused" }, `is empty, but the outcome is refused`},
		{"unknown refusal", func(m map[string]any) { m["outcome"], m["refusal"] = "refused", "Nope" }, `member "refusal" is "Nope", not one of BaseDrift`},
		{"refused paths without refusal", func(m map[string]any) { m["refused_paths"] = []any{"a"} }, `member "refused_paths" names 1 paths`},
		{"no changes with counts", func(m map[string]any) { m["outcome"] = "no_changes" }, `no_changes, but the counts say 3 added`},
		{"negative count", func(m map[string]any) { m["added"] = json.Number("-1") }, `member "added" is the number -1, not a count`},
		{"fractional count", func(m map[string]any) { m["added"] = json.Number("3.0") }, `not a count`},
		{"count as string", func(m map[string]any) { m["modified"] = "1" }, `member "modified" is "1", not a count`},
		{"huge count", func(m map[string]any) { m["modified"] = json.Number("99999999999999999999") }, `out of range`},
		{"device as float", func(m map[string]any) { m["base_device"] = json.Number("1e3") }, `member "base_device"`},
		{"exit code as string", func(m map[string]any) { m["exit_code"] = "0" }, `member "exit_code" is "0", not an integer or null`},
		{"exit code minus zero", func(m map[string]any) { m["exit_code"] = json.Number("-0") }, `member "exit_code"`},
		{"approved as string", func(m map[string]any) { m["approved"] = "yes" }, `member "approved" is "yes", not true or false`},
		{"date only", func(m map[string]any) { m["started_at"] = "2026-11-29" }, `not an RFC 3339 time`},
		{"local offset", func(m map[string]any) { m["ended_at"] = "2026-11-29T20:02:40+01:00" }, `not in the form Seal writes`},
		{"zero time", func(m map[string]any) { m["started_at"] = "0001-01-01T00:00:00Z" }, `zero time`},
		{"md5 digest", func(m map[string]any) { m["base_digest"] = "md5:abc" }, `member "base_digest" is "md5:abc", not sha256`},
		{"uppercase digest", func(m map[string]any) { m["diff_digest"] = strings.ToUpper(m["diff_digest"].(string)) }, `member "diff_digest"`},
		{"short previous", func(m map[string]any) { m["previous"] = "sha256:abcd" }, `member "previous"`},
		{"disclaimer missing a token", func(m map[string]any) { m["not_transactional"] = []any{"network", "databases", "processes"} }, `lacks "outside_surface"`},
		{"disclaimer not strings", func(m map[string]any) { m["not_transactional"] = []any{json.Number("1")} }, `item 0 is the number 1`},
		{"schema v2", func(m map[string]any) { m["schema"] = "airlock.receipt/v2" }, `schema is "airlock.receipt/v2"`},
		{"no schema", func(m map[string]any) { delete(m, "schema") }, `no "schema" member`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := rawOf(t, seal(t, sample()))
			tc.edit(m)
			expectInvalid(t, reseal(t, m), tc.want)
		})
	}
}

func TestVerifyRejectsBadJSON(t *testing.T) {
	good := seal(t, sample())
	nonUTF8 := sample()
	nonUTF8.Base = "/srv/caf\xe9"
	goodB64 := seal(t, nonUTF8)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"duplicate member", bytes.Replace(good, []byte("{\n"), []byte("{\n  \"outcome\": \"discarded\",\n"), 1), `member "outcome" appears twice in the receipt`},
		{"duplicate nested member", bytes.Replace(goodB64, []byte(`"base64": `), []byte(`"base64": "AA==", "base64": `), 1), `member "base64" appears twice in the receipt.base`},
		{"duplicate by escape", bytes.Replace(good, []byte("{\n"), []byte("{\n  \"\\u0074x\": \"x\",\n"), 1), `member "tx" appears twice`},
		{"trailing object", append(append([]byte{}, good...), "{}"...), "more after"},
		{"trailing garbage", append(append([]byte{}, good...), "x"...), "more after"},
		{"truncated", good[:len(good)/2], "not JSON"},
		{"empty", nil, "not JSON"},
		{"array", []byte("[]"), "not an object"},
		// Deep nesting once cost time quadratic in the depth.
		{"deep nesting", bytes.Repeat([]byte("["), 100000), "nested more than 32 deep"},
		{"deep member", bytes.Replace(good, []byte("{\n"), []byte("{\n  \"x\": "+strings.Repeat("[", 40)+strings.Repeat("]", 40)+",\n"), 1), "nested more than 32 deep"},
		{"string", []byte(`"receipt"`), "not an object"},
		{"invalid utf-8", bytes.Replace(good, []byte("copy"), []byte("c\xffpy"), 1), "not valid UTF-8"},
		{"no digest", bytes.Replace(good, []byte(`"digest"`), []byte(`"digesT"`), 1), `no "digest" member`},
		{"digest not a digest", bytes.Replace(good, []byte(`"digest": "sha256:`), []byte(`"digest": "sha1:`), 1), `member "digest" is "sha1:`},
	} {
		t.Run(tc.name, func(t *testing.T) { expectInvalid(t, tc.data, tc.want) })
	}
	// Whitespace after the object is not "trailing data".
	if _, err := Verify(append(append([]byte{}, good...), "\n\t \n"...)); err != nil {
		t.Errorf("trailing whitespace: %v", err)
	}
}

func TestSealRefusesWhatVerifyWould(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(r *Receipt)
		want string
	}{
		{"no tx", func(r *Receipt) { r.TxID = "" }, `member "tx"`},
		{"no outcome", func(r *Receipt) { r.Outcome = "" }, `member "outcome"`},
		{"zero time", func(r *Receipt) { r.StartedAt = time.Time{} }, `member "started_at" is the zero time`},
		{"no digests", func(r *Receipt) { r.DiffDigest = "" }, `member "diff_digest"`},
		{"partial disclaimer", func(r *Receipt) { r.NotTransactional = []string{"network"} }, `lacks "databases"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample()
			tc.edit(r)
			_, err := r.Seal()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "seal receipt of transaction") {
				t.Errorf("Seal error %v, want one saying %q", err, tc.want)
			}
			if r.Digest != "" {
				t.Errorf("Seal set a digest on a receipt it refused")
			}
		})
	}
}

func TestSealNormalisesTimesToUTC(t *testing.T) {
	r := sample()
	r.StartedAt = r.StartedAt.In(time.FixedZone("CET", 3600))
	data := seal(t, r)
	if !bytes.Contains(data, []byte(`"started_at": "2026-11-29T19:02:33.123456789Z"`)) {
		t.Errorf("start time not written in UTC:\n%s", data)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Load(filepath.Join(dir, "missing.json")); err == nil || IsInvalid(err) || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "is a directory, not a regular file") {
		t.Errorf("directory: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "airlock.receipt/v1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(bad)
	if err == nil || !IsInvalid(err) || !strings.Contains(err.Error(), bad) {
		t.Errorf("invalid receipt: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// TestGolden pins the file form: member names, order, spacing, and the
// digest, which the chain of receipts and other tools rely on.
func TestGolden(t *testing.T) {
	r := sample()
	r.Base = "/srv/caf\xe9"
	r.Outcome, r.Refusal = "refused", "BaseDrift"
	r.RefusedPaths = []string{"src/main.go"}
	r.Approved = true
	data := seal(t, r)
	golden := filepath.Join("testdata", "receipt.golden")
	if *update {
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("sealed receipt differs from %s (go test -update rewrites it if the change is intended):\n%s", golden, data)
	}
	if _, err := Verify(want); err != nil {
		t.Errorf("golden receipt does not verify: %v", err)
	}
}

package receipt

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzVerify: Verify never panics, and whatever it accepts is a receipt
// that Seal reproduces exactly (same digest) and that still verifies in
// MarshalJSON's compact form. A mutated receipt almost never keeps a valid
// digest, so each input is also tried with its digest recomputed, as a
// forger would: that puts the member checks, not just the digest, under
// the fuzzer.
func FuzzVerify(f *testing.F) {
	r := sample()
	good, err := r.Seal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	compact, _ := json.Marshal(r)
	f.Add(compact)
	r2 := sample()
	r2.Base, r2.Outcome, r2.Refusal, r2.ExitCode = "/x\xff", "refused", "MergeConflict", nil
	if b, err := r2.Seal(); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"airlock.receipt/v1","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`[{"x":[{"y":{}}]}]`))
	f.Add(bytes.Repeat([]byte("["), 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		accepted(t, data)
		if obj, err := parse(data); err == nil {
			d, err := digestOf(obj)
			if err != nil {
				t.Fatalf("digestOf a parsed object: %v", err)
			}
			obj["digest"] = d
			resealed, err := json.Marshal(obj)
			if err != nil {
				t.Fatalf("re-encode a parsed object: %v", err)
			}
			accepted(t, resealed)
		}
	})
}

// accepted checks FuzzVerify's property for one input.
func accepted(t *testing.T, data []byte) {
	t.Helper()
	r, err := Verify(data)
	if err != nil {
		if r != nil {
			t.Fatal("Verify returned a receipt with its error")
		}
		return
	}
	want := r.Digest
	again, err := r.Seal()
	if err != nil {
		t.Fatalf("accepted receipt does not re-seal: %v\n%s", err, data)
	}
	if r.Digest != want {
		t.Fatalf("re-sealing changed the digest from %s to %s:\n%s\n%s", want, r.Digest, data, again)
	}
	if _, err := Verify(again); err != nil {
		t.Fatalf("re-sealed receipt does not verify: %v", err)
	}
	compact, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(compact); err != nil {
		t.Fatalf("compact re-encoding does not verify: %v\n%s", err, compact)
	}
}

package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// fakeSig is an armored signature in form (not a valid SSHSIG: this
// package checks the form; ssh-keygen checks the signature, in the e2e
// tests).
const fakeSig = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQ==\n-----END SSH SIGNATURE-----\n"

// A signed receipt: the signature signs exactly the bytes the digest
// hashes, so signing leaves the digest (and every chain link to it) as it
// was; the signature member round-trips and must be an armored SSH
// signature.
func TestSignature(t *testing.T) {
	unsigned := seal(t, sample())
	r := sample()
	var signed []byte
	data, err := r.SealSigned(func(b []byte) (string, error) {
		signed = append([]byte(nil), b...)
		return fakeSig, nil
	})
	if err != nil {
		t.Fatalf("SealSigned: %v", err)
	}
	u, err := Verify(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(data)
	if err != nil {
		t.Fatalf("Verify of a signed receipt: %v", err)
	}
	if got.Signature != fakeSig || got.Digest != u.Digest || r.Digest != u.Digest {
		t.Errorf("signed: signature %q digest %s; unsigned digest %s", got.Signature, got.Digest, u.Digest)
	}
	sum := sha256.Sum256(signed)
	if "sha256:"+hex.EncodeToString(sum[:]) != got.Digest {
		t.Errorf("the signed bytes do not hash to the digest:\n%s", signed)
	}
	if strings.Contains(string(signed), "signature") || strings.Contains(string(signed), `"digest"`) {
		t.Errorf("the signed bytes hold the signature or the digest:\n%s", signed)
	}
	sb, err := SignedBytes(data)
	if err != nil || string(sb) != string(signed) {
		t.Errorf("SignedBytes = %q, %v; want what was signed", sb, err)
	}

	for _, bad := range []any{"", "not armored", strings.Replace(fakeSig, "U1NI", "!!!", 1), 7} {
		obj := rawOf(t, data)
		obj["signature"] = bad
		if _, err := Verify(reseal(t, obj)); err == nil || !strings.Contains(err.Error(), `"signature"`) {
			t.Errorf("signature %q: Verify err %v, want one naming the member", bad, err)
		}
	}

	fail := errors.New("the agent has no such key")
	if _, err := sample().SealSigned(func([]byte) (string, error) { return "", fail }); !errors.Is(err, fail) {
		t.Errorf("a signing that fails: SealSigned err %v, want it", err)
	}
}

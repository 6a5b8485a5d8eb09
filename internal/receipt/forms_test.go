package receipt

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// formOracles are the regular expressions the hand-written forms stand
// for.
var formOracles = []struct {
	name string
	re   *regexp.Regexp
	is   func(string) bool
}{
	{"commit", regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`), isCommit},
	{"digest", regexp.MustCompile(`^sha256:[0-9a-f]{64}$`), isDigest},
	{"tx", regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`), isTxID},
	{"nat", regexp.MustCompile(`^(0|[1-9][0-9]*)$`), isNat},
	{"int", regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`), isInt},
	{"fs", regexp.MustCompile(`^(fsid-[0-9a-f]{8}-[0-9a-f]{16}|uuid-[0-9a-f]{8}-[0-9a-f]{2,32}|dev-[0-9a-f]{16})$`), isFS},
}

// formPieces build the strings the forms are tried on: their prefixes,
// the characters they take and a few they do not, around every length
// they bound.
var formPieces = []string{"sha256:", "fsid-", "uuid-", "dev-", "-", "0", "1", "9", "a", "f", "g", "A", "F", "Z", ".", "_", "\n", "é", "\x00", " ", "+"}

func checkForms(t *testing.T, s string) {
	t.Helper()
	for _, f := range formOracles {
		if got, want := f.is(s), f.re.MatchString(s); got != want {
			t.Fatalf("%s(%q) = %v, its expression says %v", f.name, s, got, want)
		}
	}
}

// TestFormsMatchTheirExpressions holds each hand-written form to its
// regular expression, on the strings a receipt's members are and on
// random ones near every boundary.
func TestFormsMatchTheirExpressions(t *testing.T) {
	hex := func(n int) string { return strings.Repeat("0123456789abcdef", 5)[:n] }
	for _, s := range []string{"", "0", "00", "01", "10", "-", "-0", "-1", "-01", "-10", "--1", "1-",
		hex(40), hex(64), hex(39), hex(41), hex(63), hex(65), strings.ToUpper(hex(40)),
		"sha256:" + hex(64), "sha256:" + hex(63), "SHA256:" + hex(64), "sha256:" + hex(64) + "\n",
		"20261202-041752-14f4", ".", "..", strings.Repeat("a", 64), strings.Repeat("a", 65), "a b",
		"fsid-" + hex(8) + "-" + hex(16), "fsid-" + hex(8) + "-" + hex(15), "uuid-" + hex(8) + "-" + hex(2),
		"uuid-" + hex(8) + "-" + hex(32), "uuid-" + hex(8) + "-" + hex(33), "uuid-" + hex(8) + "-" + hex(1),
		"dev-" + hex(16), "dev-" + hex(17), "dev-" + hex(16) + "\n"} {
		checkForms(t, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b strings.Builder
		for range rng.IntN(12) {
			p := formPieces[rng.IntN(len(formPieces))]
			if rng.IntN(3) == 0 {
				p = hex(rng.IntN(66))
			}
			b.WriteString(p)
		}
		checkForms(t, b.String())
	}
}

func FuzzForms(f *testing.F) {
	for _, s := range []string{"", "0", "-1", "sha256:", "fsid-", "uuid-", "dev-", "20261202-041752-14f4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkForms(t, s) })
}

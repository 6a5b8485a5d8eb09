package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/airlockdev/airlock"
)

// writeBlock prints the settle block: one airlock.key=value line each, in
// docs/reference.md's order. Values never span lines: see escapeValue.
func writeBlock(w io.Writer, res *airlock.Result) {
	rc := res.Receipt
	var refusal, paths string
	if res.Refusal != nil {
		refusal = string(res.Refusal.Kind)
		var ps []string
		for _, p := range res.Refusal.Paths {
			ps = append(ps, escapeValue(p))
		}
		paths = strings.Join(ps, ",")
	} else if rc != nil && rc.Refusal != "" {
		refusal = rc.Refusal
		var ps []string
		for _, p := range rc.RefusedPaths {
			ps = append(ps, escapeValue(string(p)))
		}
		paths = strings.Join(ps, ",")
	}
	var merged []string
	for _, p := range res.Merged {
		merged = append(merged, escapeValue(p))
	}
	var branch, branchHead string
	if res.Branch != nil {
		branch, branchHead = res.Branch.Name, res.Branch.Head
	}
	var baseD, resultD, diffD, receiptPath string
	if rc != nil {
		baseD, resultD, diffD = rc.BaseDigest, rc.ResultDigest, rc.DiffDigest
		receiptPath = res.ReceiptPath
	}
	lines := [][2]string{
		{"tx", res.TxID},
		{"outcome", string(res.Outcome)},
		{"added", fmt.Sprint(res.Added)},
		{"modified", fmt.Sprint(res.Modified)},
		{"deleted", fmt.Sprint(res.Deleted)},
		{"refusal", refusal},
		{"refused_paths", paths},
		{"merged_paths", strings.Join(merged, ",")},
		{"base_digest", baseD},
		{"result_digest", resultD},
		{"diff_digest", diffD},
		{"receipt", escapeValue(receiptPath)},
		{"branch", branch},
		{"branch_head", branchHead},
		{"not_transactional", strings.Join(airlock.NotTransactional, ",")},
	}
	if res.PartOf != "" {
		// A partial commit only: the lines above stay what every
		// settle prints.
		var ps []string
		for _, p := range res.Receipt.Paths {
			ps = append(ps, escapeValue(p))
		}
		lines = append(lines, [2]string{"part_of", res.PartOf}, [2]string{"paths", strings.Join(ps, ",")})
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "airlock.%s=%s\n", l[0], l[1])
	}
	io.WriteString(w, b.String())
	writeWarnings(w, res)
}

// writeWarnings prints what went wrong after a settle's outcome was
// recorded; --quiet does not hide it.
func writeWarnings(w io.Writer, res *airlock.Result) {
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "airlock: warning: %s\n", wn)
	}
}

// escapeValue keeps a path on one line and comma lists unambiguous: bytes
// that are control characters, '%', ',', or not valid UTF-8 are written as
// %XX, as in a URL. Every other path prints as itself.
func escapeValue(s string) string { return percentEscape(s, "%,", false) }

// percentEscape %-escapes, byte by byte, what a line of text must not carry
// as it is: bytes that are not UTF-8, control characters (C1 ones too,
// with c1), and the characters of also.
func percentEscape(s, also string, c1 bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r < 0x20 || r == 0x7f || (c1 && r >= 0x80 && r < 0xa0) || strings.ContainsRune(also, r) {
			fmt.Fprintf(&b, "%%%02X", s[i])
			i++
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

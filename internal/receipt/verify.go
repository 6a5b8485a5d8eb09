package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// invalidError is what Verify returns; it unwraps to errInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return errInvalid }

func invalid(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}

// members are the members of a v1 receipt, all required, in file order.
var members = []string{
	"schema", "tx", "base", "base_device", "base_inode", "backend", "command",
	"started_at", "ended_at", "exit_code", "outcome", "refusal", "refused_paths",
	"added", "modified", "deleted", "excluded_selectors", "protected_selectors",
	"approved", "base_digest", "result_digest", "diff_digest", "not_transactional",
	"previous", "digest",
}

// optional are the members a v1 receipt may carry: the branch of a
// worktree transaction, both or neither.
var optional = []string{"branch", "branch_head"}

// landedMembers are the members of a transaction landed into a git
// remote (`land --remote`): the branch and the commit the landing made
// there, both or neither.
var landedMembers = []string{"landed_branch", "landed_commit"}

// validatorsMember is optional on its own: the validate commands a settle
// ran, present (and not empty) exactly when one ran.
const validatorsMember = "validators"

// mergedMember is optional on its own: the paths a commit three-way
// merged, present (and not empty) only in a committed receipt that merged.
const mergedMember = "merged"

// undoesMember is optional on its own: the transaction whose commit an
// undo reverts, present only in an undo's receipt.
const undoesMember = "undoes"

// signatureMember is optional on its own: the receipt's armored SSH
// signature, absent in an unsigned receipt. Neither the digest nor the
// signature covers it.
const signatureMember = "signature"

// partialMembers are a partial commit's: the transaction it took part of
// and the paths it landed, both or neither, only in a committed receipt.
var partialMembers = []string{"part_of", "paths"}

// baseFSMember is optional on its own: the base's file system identity,
// present in every receipt since it was added, absent in older ones.
const baseFSMember = "base_fs"

// Verify checks that data is a whole, unedited v1 receipt and returns it.
// The error says what is wrong: the JSON, the digest, or which member.
func Verify(data []byte) (*Receipt, error) {
	if !utf8.Valid(data) {
		// encoding/json would read invalid bytes as U+FFFD, so two
		// different files could share one digest.
		return nil, invalid("not valid UTF-8 text")
	}
	obj, err := parse(data)
	if err != nil {
		return nil, err
	}
	schema, ok := obj["schema"]
	if !ok {
		return nil, invalid("no \"schema\" member: not an airlock receipt")
	}
	if s, ok := schema.(string); !ok || s != Schema {
		return nil, invalid("schema is %s, not %q: not a receipt this version of airlock can check", show(schema), Schema)
	}
	dv, ok := obj["digest"]
	if !ok {
		return nil, invalid("no \"digest\" member: the receipt was never sealed, or the digest was removed")
	}
	claimed, ok := dv.(string)
	if !ok || !isDigest(claimed) {
		return nil, invalid("member \"digest\" is %s, not sha256:<64 lowercase hex digits>", show(dv))
	}
	actual, err := digestOf(obj)
	if err != nil {
		return nil, err
	}
	if actual != claimed {
		return nil, invalid("digest mismatch: the receipt says %s but its content hashes to %s: it was edited after it was sealed", claimed, actual)
	}
	return check(obj)
}

// parse reads data as exactly one JSON object with no member repeated at any
// depth, keeping numbers as written.
func parse(data []byte) (map[string]any, error) {
	if err := checkTokens(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, invalid("not JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, invalid("the JSON is %s, not an object", kindOf(v))
	}
	return obj, nil
}

// frame is one open object or array during checkTokens.
type frame struct {
	object  bool
	wantKey bool
	keys    map[string]bool
	lastKey string
	parent  *frame
}

// where names the frame for an error message; it is built only then, since
// a path string per frame would cost time quadratic in the depth.
func (f *frame) where() string {
	if f.parent == nil {
		return "the receipt"
	}
	if f.parent.object {
		return f.parent.where() + "." + f.parent.lastKey
	}
	return f.parent.where() + "[]"
}

// maxDepth bounds nesting: a receipt nests three levels deep at most, and
// the decoder's own limit is far above what a receipt can need.
const maxDepth = 32

// checkTokens walks data token by token: a decoder into a map silently
// keeps the last of two equal keys, and any reader that keeps the first
// would then see a different receipt under the same digest.
func checkTokens(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	done := false
	// valueDone records that the top frame received a whole value.
	valueDone := func() {
		if len(stack) == 0 {
			done = true
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.wantKey = true
		}
	}
	for !done {
		tok, err := dec.Token()
		if err == io.EOF {
			return invalid("not JSON: the data ends before the receipt does")
		}
		if err != nil {
			return invalid("not JSON: %v", err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				valueDone()
				continue
			}
			key, ok := tok.(string)
			if !ok {
				return invalid("not JSON: object key %v is not a string", tok)
			}
			if top.keys[key] {
				return invalid("member %q appears twice in %s: a duplicated key can make two readers see two different receipts", key, top.where())
			}
			top.keys[key] = true
			top.lastKey = key
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxDepth {
				return invalid("values nested more than %d deep: not a receipt", maxDepth)
			}
			f := &frame{object: tok == json.Delim('{'), parent: top}
			if f.object {
				f.wantKey, f.keys = true, map[string]bool{}
			}
			stack = append(stack, f)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("there is more after the receipt's closing brace")
	}
	return nil
}

// digestOf is the receipt digest of obj: its SignedBytes, hashed.
func digestOf(obj map[string]any) (string, error) {
	canon, err := signedBytes(obj)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// signedBytes is obj's canonical JSON without its "digest" and
// "signature" members: what the digest hashes and the signature signs.
func signedBytes(obj map[string]any) ([]byte, error) {
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "digest" && k != signatureMember {
			rest[k] = v
		}
	}
	return appendCanonical(nil, rest)
}

// SignedBytes returns what a receipt's signature signs, and its digest
// hashes: the canonical JSON (see the package documentation) of the
// receipt without its "digest" and "signature" members. data must verify.
func SignedBytes(data []byte) ([]byte, error) {
	if _, err := Verify(data); err != nil {
		return nil, err
	}
	obj, err := parse(data)
	if err != nil {
		return nil, err
	}
	return signedBytes(obj)
}

// appendCanonical appends v's canonical JSON, as the package documentation
// defines it.
func appendCanonical(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case json.Number:
		return append(b, v...), nil
	case string:
		return appendString(b, v), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys) // Go compares strings bytewise
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("canonical JSON: unexpected %T", v)
}

func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// check reads the members of a receipt whose digest is already known to be
// right, refusing anything Seal would not have written. Members are read
// in one order, so that the first one wrong is the one reported.
func check(obj map[string]any) (*Receipt, error) {
	g, err := memberGroups(obj)
	if err != nil {
		return nil, err
	}
	c := checker{obj: obj}
	r := &Receipt{Schema: Schema}
	c.readIdentity(r, g)
	c.readOutcome(r)
	c.readDigests(r)
	c.readBranches(r, g)
	c.readNamed(r, g)
	c.readValidated(r, g)
	if g.signature {
		r.Signature = c.str(signatureMember)
		if c.err == nil && !isArmoredSignature(r.Signature) {
			c.fail(signatureMember, "is not an armored SSH signature (%s ... %s)", armorBegin, armorEnd)
		}
	}
	r.Digest = c.digest("digest", false)
	if c.err != nil {
		return nil, c.err
	}
	return r, nil
}

// groups says which of a receipt's optional members it has.
type groups struct {
	branch     bool // optional: branch and branch_head
	landed     bool // landedMembers
	validators bool
	merged     bool
	baseFS     bool
	undoes     bool
	signature  bool
	partial    bool // partialMembers
}

// memberGroups refuses a receipt that lacks a member every receipt has,
// has one of a pair without the other, or has a member that is not part
// of the schema; it reports which optional members are there.
func memberGroups(obj map[string]any) (groups, error) {
	var g groups
	for _, m := range members {
		if _, ok := obj[m]; !ok {
			return g, invalid("member %q is missing", m)
		}
	}
	together := func(ms []string) (int, error) {
		n := 0
		for _, m := range ms {
			if _, ok := obj[m]; ok {
				n++
			}
		}
		if n != 0 && n != len(ms) {
			return n, invalid("members %s go together: a receipt has both or neither", strings.Join(ms, " and "))
		}
		return n, nil
	}
	present, err := together(optional)
	if err != nil {
		return g, err
	}
	landed, err := together(landedMembers)
	if err != nil {
		return g, err
	}
	partial, err := together(partialMembers)
	if err != nil {
		return g, err
	}
	g.branch, g.landed, g.partial = present > 0, landed > 0, partial > 0
	n := len(members) + present + landed + partial + validatedMembers(obj)
	for _, o := range []struct {
		name string
		has  *bool
	}{{validatorsMember, &g.validators}, {mergedMember, &g.merged}, {baseFSMember, &g.baseFS}, {undoesMember, &g.undoes}, {signatureMember, &g.signature}} {
		if _, ok := obj[o.name]; ok {
			*o.has = true
			n++
		}
	}
	if len(obj) != n {
		var extra []string
		for k := range obj {
			if !slices.Contains(members, k) && !slices.Contains(optional, k) && !slices.Contains(landedMembers, k) && !slices.Contains(partialMembers, k) && k != validatorsMember && k != mergedMember && k != baseFSMember && k != undoesMember && !isValidatedMember(k) && k != signatureMember {
				extra = append(extra, strconv.Quote(k))
			}
		}
		sort.Strings(extra)
		return g, invalid("member %s is not part of %s", strings.Join(extra, ", "), Schema)
	}
	return g, nil
}

// readIdentity reads which transaction, over which base, by which backend.
func (c *checker) readIdentity(r *Receipt, g groups) {
	r.TxID = c.str("tx")
	if c.err == nil && (!isTxID(r.TxID) || r.TxID == "." || r.TxID == "..") {
		c.fail("tx", "is %q, not a transaction id (1 to 64 characters of A-Z a-z 0-9 . _ -, not \".\" or \"..\")", r.TxID)
	}
	r.Base = c.bytes("base")
	if c.err == nil && !strings.HasPrefix(string(r.Base), "/") {
		c.fail("base", "is %q, not an absolute path", r.Base)
	}
	r.BaseDevice = c.uint("base_device")
	r.BaseInode = c.uint("base_inode")
	if g.baseFS {
		r.BaseFS = c.str(baseFSMember)
		if c.err == nil && !isFS(r.BaseFS) {
			c.fail(baseFSMember, "is %q, not a file system identity (fsid-, uuid- or dev- and hex digits)", r.BaseFS)
		}
	}
	r.Backend = c.str("backend")
	if c.err == nil && r.Backend == "" {
		c.fail("backend", "is empty")
	}
}

// readOutcome reads the command, when it ran, how it ended, and what
// became of its changes: an outcome its refusal, refused paths and counts
// agree with.
func (c *checker) readOutcome(r *Receipt) {
	r.Command = c.bytesList("command", true)
	r.StartedAt = c.time("started_at")
	r.EndedAt = c.time("ended_at")
	r.ExitCode = c.exitCode("exit_code")
	r.Outcome = c.str("outcome")
	if c.err == nil && !slices.Contains(Outcomes, r.Outcome) {
		c.fail("outcome", "is %q, not one of %s", r.Outcome, strings.Join(Outcomes, ", "))
	}
	r.Refusal = c.str("refusal")
	if c.err == nil {
		switch {
		case r.Outcome == "refused" && r.Refusal == "":
			c.fail("refusal", "is empty, but the outcome is refused and must say why")
		case r.Outcome == "refused" && !slices.Contains(RefusalKinds, r.Refusal):
			c.fail("refusal", "is %q, not one of %s", r.Refusal, strings.Join(RefusalKinds, ", "))
		case r.Outcome != "refused" && r.Refusal != "":
			c.fail("refusal", "is %q, but the outcome is %s, not refused", r.Refusal, r.Outcome)
		}
	}
	r.RefusedPaths = c.bytesList("refused_paths", false)
	if c.err == nil && r.Outcome != "refused" && len(r.RefusedPaths) > 0 {
		c.fail("refused_paths", "names %d paths, but the outcome is %s, not refused", len(r.RefusedPaths), r.Outcome)
	}
	r.Added = c.count("added")
	r.Modified = c.count("modified")
	r.Deleted = c.count("deleted")
	if c.err == nil && r.Outcome == "no_changes" && r.Added+r.Modified+r.Deleted != 0 {
		c.fail("outcome", "is no_changes, but the counts say %d added, %d modified, %d deleted", r.Added, r.Modified, r.Deleted)
	}
}

// readDigests reads what guarded the change (selectors, approval), the
// digests of the base, the result and the diff, and the chain's link.
func (c *checker) readDigests(r *Receipt) {
	r.ExcludedSelectors = c.count("excluded_selectors")
	r.ProtectedSelectors = c.count("protected_selectors")
	r.Approved = c.bool("approved")
	r.BaseDigest = c.digest("base_digest", false)
	r.ResultDigest = c.digest("result_digest", false)
	r.DiffDigest = c.digest("diff_digest", false)
	r.NotTransactional = c.disclaimer("not_transactional")
	r.Previous = c.digest("previous", true)
}

// readBranches reads the transaction's git branch and the commit it
// landed, where the receipt has them.
func (c *checker) readBranches(r *Receipt, g groups) {
	if g.branch {
		r.Branch = c.str("branch")
		if c.err == nil && r.Branch != "airlock/"+r.TxID {
			c.fail("branch", "is %q, not airlock/%s", r.Branch, r.TxID)
		}
		r.BranchHead = c.str("branch_head")
		if c.err == nil && !isCommit(r.BranchHead) {
			c.fail("branch_head", "is %q, not a commit id", r.BranchHead)
		}
	}
	if g.landed {
		r.LandedBranch = c.str("landed_branch")
		if c.err == nil && (!strings.HasPrefix(r.LandedBranch, "refs/heads/") || len(r.LandedBranch) == len("refs/heads/")) {
			c.fail("landed_branch", "is %q, not a branch's full ref name (refs/heads/...)", r.LandedBranch)
		}
		r.LandedCommit = c.str("landed_commit")
		if c.err == nil && !isCommit(r.LandedCommit) {
			c.fail("landed_commit", "is %q, not a commit id", r.LandedCommit)
		}
		if c.err == nil && r.Outcome != "committed" {
			c.fail("outcome", "is %s, but the receipt names the commit it landed (landed_commit)", r.Outcome)
		}
	}
}

// readNamed reads the validators that ran and the paths merged, where the
// receipt names them.
func (c *checker) readNamed(r *Receipt, g groups) {
	if g.validators {
		r.Validators = c.bytesList(validatorsMember, false)
		if c.err == nil && len(r.Validators) == 0 {
			c.fail(validatorsMember, "is empty: a receipt names the validators that ran, or leaves the member out")
		}
	}
	if g.merged {
		r.Merged = c.bytesList(mergedMember, false)
		switch {
		case c.err != nil:
		case len(r.Merged) == 0:
			c.fail(mergedMember, "is empty: a receipt names the paths it merged, or leaves the member out")
		case r.Outcome != "committed":
			c.fail(mergedMember, "names %d paths, but the outcome is %s: only a commit merges", len(r.Merged), r.Outcome)
		}
	}
	if g.undoes {
		r.Undoes = c.str(undoesMember)
		if c.err == nil && (!isTxID(r.Undoes) || r.Undoes == "." || r.Undoes == ".." || r.Undoes == r.TxID) {
			c.fail(undoesMember, "is %q, not another transaction's id", r.Undoes)
		}
	}
	if g.partial {
		r.PartOf = c.str("part_of")
		r.Paths = c.bytesList("paths", false)
		switch {
		case c.err != nil:
		case !isTxID(r.PartOf) || r.PartOf == "." || r.PartOf == ".." || r.PartOf == r.TxID:
			c.fail("part_of", "is %q, not another transaction's id", r.PartOf)
		case len(r.Paths) == 0:
			c.fail("paths", "is empty: a partial commit names the paths it landed")
		case r.Outcome != "committed":
			c.fail("paths", "names %d paths, but the outcome is %s: only a commit lands part of a transaction", len(r.Paths), r.Outcome)
		}
	}
}

// checker reads members, keeping the first error.
type checker struct {
	obj map[string]any
	err error
}

func (c *checker) fail(member, format string, args ...any) {
	if c.err == nil {
		c.err = invalid("member %q %s", member, fmt.Sprintf(format, args...))
	}
}

func (c *checker) typed(member, want string) {
	c.fail(member, "is %s, not %s", show(c.obj[member]), want)
}

func (c *checker) str(member string) string {
	s, ok := c.obj[member].(string)
	if !ok {
		c.typed(member, "a string")
	}
	return s
}

func (c *checker) bool(member string) bool {
	b, ok := c.obj[member].(bool)
	if !ok {
		c.typed(member, "true or false")
	}
	return b
}

func (c *checker) uint(member string) uint64 {
	n, ok := c.obj[member].(json.Number)
	if !ok || !isNat(string(n)) {
		c.typed(member, "a non-negative integer")
		return 0
	}
	u, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		c.fail(member, "is %s, out of range", n)
	}
	return u
}

func (c *checker) count(member string) int {
	n, ok := c.obj[member].(json.Number)
	if !ok || !isNat(string(n)) {
		c.typed(member, "a count (a non-negative integer)")
		return 0
	}
	i, err := strconv.Atoi(string(n))
	if err != nil {
		c.fail(member, "is %s, out of range", n)
	}
	return i
}

func (c *checker) exitCode(member string) *int {
	v := c.obj[member]
	if v == nil {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok || !isInt(string(n)) {
		c.typed(member, "an integer or null")
		return nil
	}
	i, err := strconv.Atoi(string(n))
	if err != nil {
		c.fail(member, "is %s, out of range", n)
		return nil
	}
	return &i
}

func (c *checker) time(member string) time.Time {
	s := c.str(member)
	if c.err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	switch {
	case err != nil:
		c.fail(member, "is %q, not an RFC 3339 time", s)
	case t.IsZero():
		c.fail(member, "is the zero time: the time was never set")
	case formatTime(t) != s:
		c.fail(member, "is %q, not in the form Seal writes (%s, UTC)", s, formatTime(t))
	}
	return t.UTC()
}

func (c *checker) digest(member string, mayBeEmpty bool) string {
	s := c.str(member)
	if c.err == nil && !isDigest(s) && !(mayBeEmpty && s == "") {
		want := "sha256:<64 lowercase hex digits>"
		if mayBeEmpty {
			want += ` or ""`
		}
		c.fail(member, "is %q, not %s", s, want)
	}
	return s
}

// oneBytes reads a raw-bytes value (manifest.Bytes' form): a string, or
// {"base64": ...} for bytes that are not UTF-8 (only then, so that each
// value has one form).
func oneBytes(v any) (string, string) {
	switch v := v.(type) {
	case string:
		return v, ""
	case map[string]any:
		b64, ok := v["base64"].(string)
		if len(v) != 1 || !ok {
			return "", `an object other than {"base64": "..."}`
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || base64.StdEncoding.EncodeToString(raw) != b64 {
			return "", fmt.Sprintf("base64 %q that is not canonical standard base64", b64)
		}
		if utf8.Valid(raw) {
			return "", fmt.Sprintf("base64 %q of UTF-8 text, which is written as a plain string", b64)
		}
		return string(raw), ""
	}
	return "", show(v)
}

func (c *checker) bytes(member string) string {
	b, bad := oneBytes(c.obj[member])
	if bad != "" {
		c.fail(member, "is %s, not a path", bad)
	}
	return b
}

func (c *checker) bytesList(member string, emptyOK bool) []string {
	list, ok := c.obj[member].([]any)
	if !ok {
		c.typed(member, "a list")
		return nil
	}
	var out []string
	for i, v := range list {
		b, bad := oneBytes(v)
		if bad != "" {
			c.fail(member, "item %d is %s, not a string", i, bad)
			return nil
		}
		if b == "" && !emptyOK {
			c.fail(member, "item %d is empty", i)
			return nil
		}
		out = append(out, b)
	}
	return out
}

func (c *checker) disclaimer(member string) []string {
	list, ok := c.obj[member].([]any)
	if !ok {
		c.typed(member, "a list")
		return nil
	}
	out := make([]string, 0, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			c.fail(member, "item %d is %s, not a string", i, show(v))
			return nil
		}
		out = append(out, s)
	}
	for _, want := range NotTransactional {
		if !slices.Contains(out, want) {
			c.fail(member, "lacks %q: every receipt must disclaim %s", want, strings.Join(NotTransactional, ", "))
			return nil
		}
	}
	return out
}

// show describes a parsed JSON value for an error message.
func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if len(v) > 80 {
			return strconv.Quote(v[:80]) + "..."
		}
		return strconv.Quote(v)
	case json.Number:
		return "the number " + string(v)
	case bool:
		return strconv.FormatBool(v)
	}
	return kindOf(v)
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// The armor of an SSH signature (PROTOCOL.sshsig), as ssh-keygen -Y sign
// writes it.
const (
	armorBegin = "-----BEGIN SSH SIGNATURE-----\n"
	armorEnd   = "\n-----END SSH SIGNATURE-----\n"
)

// isArmoredSignature reports whether s is one armored SSH signature: the
// armor lines around base64 lines, nothing else.
func isArmoredSignature(s string) bool {
	body, ok := strings.CutPrefix(s, armorBegin)
	if !ok {
		return false
	}
	body, ok = strings.CutSuffix(body, armorEnd)
	if !ok || body == "" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(body, "\n", ""))
	return err == nil
}

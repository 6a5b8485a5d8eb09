package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// jsonDoc is docs/json.md read as a schema: its member tables, by the
// heading above each.
type jsonDoc struct {
	sections map[string]map[string]docMember // by lowercased heading, backticks dropped
	titles   []string                        // every heading, as written (backticks dropped)
	// seen records, per section, the members some output carried.
	seen map[string]map[string]bool
}

type docMember struct {
	typ      string
	optional bool // its meaning begins with "only"
}

var (
	headingRE = regexp.MustCompile("^#{2,3} (.+)$")
	nameRE    = regexp.MustCompile("`([a-z_]+)`")
)

// readJSONDoc parses docs/json.md's tables: a row is
// "| `name`[, `name`...] | type | meaning |".
func readJSONDoc(t *testing.T) *jsonDoc {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := &jsonDoc{sections: map[string]map[string]docMember{}, seen: map[string]map[string]bool{}}
	var cur string
	inTable := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := headingRE.FindStringSubmatch(line); m != nil {
			title := strings.ReplaceAll(m[1], "`", "")
			d.titles = append(d.titles, title)
			cur = strings.ToLower(title)
			continue
		}
		// Only member tables: others (statuses, events) list values.
		if line == "| member | type | meaning |" {
			inTable = true
			continue
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
		}
		if !inTable || !strings.HasPrefix(line, "| `") || cur == "" {
			continue
		}
		cells := strings.SplitN(strings.TrimPrefix(line, "| "), " | ", 3)
		if len(cells) != 3 {
			t.Fatalf("docs/json.md, %s: a row without member, type and meaning: %s", cur, line)
		}
		if d.sections[cur] == nil {
			d.sections[cur] = map[string]docMember{}
		}
		optional := strings.HasPrefix(strings.ToLower(cells[2]), "only")
		for _, m := range nameRE.FindAllStringSubmatch(cells[0], -1) {
			d.sections[cur][m[1]] = docMember{typ: cells[1], optional: optional}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return d
}

// check reports how v differs from the type typ, at path.
func (d *jsonDoc) check(path, typ string, v any) []string {
	if rest, ok := strings.CutSuffix(typ, " or null"); ok {
		if v == nil {
			return nil
		}
		typ = rest
	}
	bad := func() []string { return []string{fmt.Sprintf("%s: %s is not %s", path, short(v), typ)} }
	switch typ {
	case "string":
		if _, ok := v.(string); !ok {
			return bad()
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			return bad()
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case "time":
		if s, ok := v.(string); !ok || !timeRE.MatchString(s) {
			return bad()
		}
	case "digest":
		if s, ok := v.(string); !ok || !digestRE.MatchString(s) {
			return bad()
		}
	case "object":
		if _, ok := v.(map[string]any); !ok {
			return bad()
		}
	case "raw bytes":
		switch v := v.(type) {
		case string:
		case map[string]any:
			if _, ok := v["base64"].(string); !ok || len(v) != 1 {
				return bad()
			}
		default:
			return bad()
		}
	default:
		if elem, ok := strings.CutPrefix(typ, "list of "); ok {
			list, ok := v.([]any)
			if !ok {
				return bad()
			}
			elem = singular(elem)
			var errs []string
			for i, e := range list {
				errs = append(errs, d.check(fmt.Sprintf("%s[%d]", path, i), elem, e)...)
			}
			return errs
		}
		if _, ok := d.sections[typ]; !ok {
			return []string{fmt.Sprintf("%s: type %q is neither a JSON type nor a heading of docs/json.md", path, typ)}
		}
		return d.object(path, v, typ)
	}
	return nil
}

// object checks that v is an object whose members are exactly those the
// sections document: none undocumented, every one not marked "only" there.
func (d *jsonDoc) object(path string, v any, sections ...string) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: %s is not an object (%s)", path, short(v), strings.Join(sections, " + "))}
	}
	var errs []string
	doc := map[string]docMember{}
	where := map[string]string{}
	for _, s := range sections {
		members, ok := d.sections[s]
		if !ok {
			return []string{fmt.Sprintf("%s: docs/json.md has no member table under a heading %q", path, s)}
		}
		for name, dm := range members {
			doc[name], where[name] = dm, s
		}
	}
	for _, k := range sortedMembers(m) {
		dm, ok := doc[k]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: member %q is not documented (%s)", path, k, strings.Join(sections, " + ")))
			continue
		}
		if d.seen[where[k]] == nil {
			d.seen[where[k]] = map[string]bool{}
		}
		d.seen[where[k]][k] = true
		errs = append(errs, d.check(path+"."+k, dm.typ, m[k])...)
	}
	for name, dm := range doc {
		if _, ok := m[name]; !ok && !dm.optional {
			errs = append(errs, fmt.Sprintf("%s: documented member %q is missing (%s)", path, name, where[name]))
		}
	}
	sort.Strings(errs)
	return errs
}

// singular is a list's element type: "receipts" is a list of "receipt".
func singular(s string) string {
	if s == "raw bytes" {
		return s
	}
	return strings.TrimSuffix(s, "s")
}

func sortedMembers(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// TestE2EJSONMatchesDocs runs every command that takes --json over
// transactions in each state and checks each output against its table in
// docs/json.md: no member the doc does not name, none it promises
// missing, each of the type it says. Every member the doc lists must show
// up in some output here, except the few this scenario cannot produce
// (notExercised), and every command section must be run.
func TestE2EJSONMatchesDocs(t *testing.T) {
	d := readJSONDoc(t)
	x := newH(t)
	build(t, x.base, tree{"f.txt": F(0o644, "one\n"), "p.txt": F(0o644, "protected\n"), "gone.txt": F(0o644, "bye\n")})

	ran := map[string]bool{}
	// want runs airlock with args and checks its stdout, one JSON value,
	// against the doc: an object of the sections' members, or with array
	// set, a list of such objects.
	var checkOutput func(title string, r result, code int, array bool, sections []string) map[string]any
	want := func(title string, code int, array bool, sections []string, args ...string) map[string]any {
		t.Helper()
		return checkOutput(title, x.airlock(args...), code, array, sections)
	}
	checkOutput = func(title string, r result, code int, array bool, sections []string) map[string]any {
		t.Helper()
		args := r.Args
		wantCode(t, r, code)
		ran[strings.ToLower(title)] = true
		dec := json.NewDecoder(strings.NewReader(r.Stdout))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil || dec.More() {
			t.Fatalf("airlock %q: stdout is not one JSON value (%v):\n%s", args, err, r.Stdout)
		}
		path := "airlock " + strings.Join(args, " ")
		var errs []string
		if array {
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				t.Fatalf("%s: want a non-empty JSON array:\n%s", path, r.Stdout)
			}
			for i, e := range list {
				errs = append(errs, d.object(fmt.Sprintf("%s[%d]", path, i), e, sections...)...)
			}
		} else {
			errs = d.object(path, v, sections...)
		}
		for _, e := range errs {
			t.Error(e)
		}
		m, _ := v.(map[string]any)
		return m
	}
	var (
		settle   = []string{"settle result"}
		txObject = []string{"transaction object"}
	)
	section := func(title string) []string { return []string{strings.ToLower(title)} }
	const (
		open     = "airlock open --json"
		commit   = "airlock commit ID --json"
		discard  = "airlock discard ID --json"
		list     = "airlock list --json"
		show     = "airlock show ID --json"
		diff     = "airlock diff ID --json"
		runJSON  = "airlock run --json -- COMMAND"
		land     = "airlock land ID... --json"
		log      = "airlock log --json"
		undo     = "airlock undo [ID] --json"
		verify   = "airlock receipt verify FILE|ID --json"
		recover  = "airlock recover --json"
		doctor   = "airlock doctor --json"
		initJSON = "airlock init claude|codex|gemini --json"
		version  = "airlock version --json"
		gc       = "airlock gc --json"
		review   = "airlock review [ID] --json"
		rebase   = "airlock rebase ID --json"
		// checkpoints (checkpoint's object is its own section)
		checkpoint  = "airlock checkpoint ID --json"
		checkpoints = "airlock checkpoints ID --json"
		rewind      = "airlock rewind ID N --json"
	)

	// A run pools its tree (its command ran contained), which the next
	// open recycles: the transaction objects below say so.
	want(runJSON, 0, false, append(settle, section(runJSON)...), "run", "--workdir", x.base, "--backend", "copy", "--json", "--quiet", "--", "true")

	// An open transaction, a refused one and a committed one.
	o := want(open, 0, false, section(open), "open", "--workdir", x.base, "--id", "t-open", "--backend", "copy", "--json")
	staged, _ := o["path"].(string)
	writeFile(t, filepath.Join(staged, "f.txt"), "one, edited\n")
	must(t, os.Remove(filepath.Join(staged, "gone.txt")))
	must(t, os.Mkdir(filepath.Join(staged, "dir"), 0o755))
	writeFile(t, filepath.Join(staged, "dir", "new.txt"), "new\n")

	s := x.openTx("t-refused", "--backend", "copy", "--protect", "p.txt")
	writeFile(t, filepath.Join(s, "p.txt"), "edited without approval\n")
	want(commit, 75, false, settle, "commit", "t-refused", "--json", "--quiet")

	s = x.openTx("t-commit", "--backend", "copy")
	writeFile(t, filepath.Join(s, "c.txt"), "committed\n")
	want(commit, 0, false, settle, "commit", "t-commit", "--validate", "true", "--json", "--quiet")
	want(commit, 0, false, settle, "commit", "t-commit", "--json", "--quiet")

	// A partial commit: its result and receipt carry part_of and paths.
	s = x.openTx("t-part", "--backend", "copy")
	writeFile(t, filepath.Join(s, "part1.txt"), "landed\n")
	writeFile(t, filepath.Join(s, "part2.txt"), "left open\n")
	want(commit, 0, false, settle, "commit", "t-part", "--json", "--quiet", "--", "part1.txt")
	wantCode(t, x.airlock("discard", "t-part", "--quiet"), 0)

	s = x.openTx("t-discard", "--backend", "copy")
	writeFile(t, filepath.Join(s, "d.txt"), "dropped\n")
	want(discard, 0, false, settle, "discard", "t-discard", "--json", "--quiet")
	want(discard, 0, false, settle, "discard", "t-discard", "--json", "--quiet")

	want(list, 0, true, txObject, "list", "--json")
	want(list, 0, true, txObject, "list", "--all", "--json")
	for _, id := range []string{"t-open", "t-refused", "t-commit"} {
		want(show, 0, false, append(txObject, section(show)...), "show", id, "--json")
	}
	for _, format := range []string{"", "--stat", "--name-status"} {
		args := []string{"diff", "t-open", "--json"}
		if format != "" {
			args = append(args, format)
		}
		want(diff, 0, false, section(diff), args...)
	}

	want(runJSON, 0, false, append(settle, section(runJSON)...), "run", "--workdir", x.base, "--backend", "copy", "--json", "--quiet", "--", "sh", "-c", "echo ran > r.txt; echo to-stdout")
	r := want(runJSON, 3, false, append(settle, section(runJSON)...), "run", "--workdir", x.base, "--backend", "copy", "--json", "--quiet", "--", "sh", "-c", "echo x > x.txt; exit 3")
	if r["outcome"] != "discarded" || fmt.Sprint(r["exit_code"]) != "3" {
		t.Errorf("run --json of a command that exits 3: outcome %v, exit_code %v", r["outcome"], r["exit_code"])
	}

	// land: one lands, one is refused, one does not exist.
	s = x.openTx("t-land1", "--backend", "copy")
	writeFile(t, filepath.Join(s, "l1.txt"), "landed\n")
	s = x.openTx("t-land2", "--backend", "copy", "--protect", "p.txt")
	writeFile(t, filepath.Join(s, "p.txt"), "needs approval\n")
	want(land, 125, false, section(land), "land", "t-land1", "t-land2", "no-such-tx", "--json", "--quiet")

	want(log, 0, false, section(log), "log", "--workdir", x.base, "--json")
	want(undo, 0, false, settle, "undo", "--workdir", x.base, "--json", "--quiet")

	// receipt verify: a valid receipt by id, then an edited copy.
	v := want(verify, 0, false, section(verify), "receipt", "verify", "t-commit", "--json")
	rpath, _ := v["path"].(string)
	data, err := os.ReadFile(rpath)
	must(t, err)
	bad := filepath.Join(t.TempDir(), "receipt.json")
	writeFile(t, bad, strings.Replace(string(data), `"added": 1`, `"added": 2`, 1))
	want(verify, 1, false, section(verify), "receipt", "verify", bad, "--json")

	// recover: nothing to do, then an apply killed after its journal.
	want(recover, 0, false, section(recover), "recover", "--workdir", x.base, "--json")
	s = x.openTx("t-crash", "--backend", "copy")
	writeFile(t, filepath.Join(s, "f.txt"), "crashed\n")
	if k := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=journal-synced"}, "commit", "t-crash"); k.Signal != syscall.SIGKILL {
		t.Fatalf("the fault point did not kill the commit:\n%v", k)
	}
	rec := want(recover, 0, false, section(recover), "recover", "--workdir", x.base, "--json", "--quiet")
	if rec["action"] != "rolled_back" {
		t.Errorf("recover after a killed apply: action %v, want rolled_back", rec["action"])
	}

	// review: the page's Discard, as the button posts it.
	s = x.openTx("t-review", "--backend", "copy")
	writeFile(t, filepath.Join(s, "rv.txt"), "reviewed\n")
	// The review waits for the page's Discard as long as the process may
	// run: its own timeout must not race a busy test to the decision.
	p := x.start(run{args: []string{"review", "t-review", "--json", "--no-browser", "--timeout", "1h", "--quiet"}})
	page := reviewURL(t, p)
	u, err := url.Parse(page)
	must(t, err)
	req, err := http.NewRequest(http.MethodPost, page+"discard", nil)
	must(t, err)
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST %sdiscard: %s", page, resp.Status)
	}
	checkOutput(review, p.WaitSettled(), 0, false, settle)

	want(doctor, 0, false, section(doctor), "doctor", "--workdir", x.base, "--json")
	want(initJSON, 0, false, section(initJSON), "init", "claude", "--workdir", x.base, "--json")
	want(initJSON, 0, false, section(initJSON), "init", "codex", "--workdir", x.base, "--json")
	want(version, 0, false, section(version), "version", "--json")

	// rebase: the base's f.txt moves under t-rebase by another airlock
	// commit, which keeps the original (the merge's ancestor); both
	// changed its one line, so the rebase marks it, and show lists it.
	s = x.openTx("t-rebase", "--backend", "copy")
	writeFile(t, filepath.Join(s, "f.txt"), "one, by t-rebase\n")
	writeFile(t, filepath.Join(s, "rb.txt"), "added by t-rebase\n")
	s = x.openTx("t-moves", "--backend", "copy")
	writeFile(t, filepath.Join(s, "f.txt"), "one, by t-moves\n")
	wantCode(t, x.airlock("commit", "t-moves", "--quiet"), 0)
	rb := want(rebase, 0, false, section(rebase), "rebase", "t-rebase", "--json")
	if fmt.Sprint(rb["conflicts"]) != "[f.txt]" {
		t.Errorf("rebase t-rebase --json: conflicts %v, want [f.txt]", rb["conflicts"])
	}
	if sh := want(show, 0, false, append(txObject, section(show)...), "show", "t-rebase", "--json"); fmt.Sprint(sh["conflicts"]) != "[f.txt]" {
		t.Errorf("show t-rebase --json after the rebase: conflicts %v, want [f.txt]", sh["conflicts"])
	}
	wantCode(t, x.airlock("discard", "t-rebase", "--quiet"), 0)

	// Checkpoints of t-open, and a rewind to the first (which takes one
	// of its own first, marked auto).
	want(checkpoint, 0, false, section("checkpoint"), "checkpoint", "t-open", "-m", "edits", "--json")
	want(rewind, 0, false, section(rewind), "rewind", "t-open", "1", "--json")
	want(checkpoints, 0, false, section(checkpoints), "checkpoints", "t-open", "--json")

	// And a pooled tree for gc to report.
	want(runJSON, 0, false, append(settle, section(runJSON)...), "run", "--workdir", x.base, "--backend", "copy", "--json", "--quiet", "--", "true")
	want(gc, 0, false, section(gc), "gc", "--dry-run", "--json")
	want(gc, 0, false, section(gc), "gc", "t-refused", "t-commit", "--json")
	// t-commit's state is gone: its receipt is read from the base's chain,
	// and log lists it as no longer undoable.
	if v := want(verify, 0, false, section(verify), "receipt", "verify", "t-commit", "--json"); v["chain"] != x.base {
		t.Errorf("receipt verify t-commit after gc: chain %v, want %s", v["chain"], x.base)
	}
	if lg := want(log, 0, false, section(log), "log", "--workdir", x.base, "--json"); !slices.Contains(lg["undo_gone"].([]any), any("t-commit")) {
		t.Errorf("log after gc t-commit: undo_gone %v, want t-commit in it", lg["undo_gone"])
	}

	// Every command section of the doc was run, but the landing into a
	// remote, which needs a git server (e2e_remote_test.go runs it).
	elsewhere := map[string]bool{"airlock log --remote remote --branch branch --json": true}
	for _, title := range d.titles {
		if strings.HasPrefix(title, "airlock ") && !ran[strings.ToLower(title)] && !elsewhere[strings.ToLower(title)] {
			t.Errorf("docs/json.md documents %q, which this test does not run", title)
		}
	}
	// Every documented member showed up somewhere, but those no run here
	// can print.
	notExercised := map[string][]string{
		// kept: a deleted directory the base filled meanwhile; branch and
		// branch_head: kept commits (e2e_keep_test.go); merged: a
		// three-way merge (TestE2EMergedPathsAreNamed).
		"settle result":      {"kept", "branch", "branch_head", "merged"},
		"receipt":            {"branch", "branch_head", "merged", "landed_branch", "landed_commit", "validated", "batch_tree", "signature"}, // landed: e2e_remote_test.go, e2e_remote_batch_test.go; signature: a signing key (e2e_signing_test.go)
		"transaction object": {"branch", "branch_head", "branch_kept", "not_recycled", "error"},                                             // worktree transactions; a pooled tree a process held (e2e_recycle_test.go); a corrupt one (TestJSONDocMatchesTypes holds its type)
		// --base-gone
		"airlock recover --json": {"journal"},
		// a stamped build: TestE2EVersion checks it against this doc
		"airlock version --json": {"commit_time"},
		// landings into a remote (e2e_remote_test.go)
		"airlock land id... --json":                          {"remote", "branch"},
		"landed transaction":                                 {"commit", "attempts", "already"},
		"airlock log --remote remote --branch branch --json": {"remote", "branch", "head", "entries", "broken", "unreceipted"},
		// a signed receipt (e2e_signing_test.go)
		"airlock receipt verify file|id --json": {"signer"},
	}
	for sec, members := range d.sections {
		for name := range members {
			if !d.seen[sec][name] && !slices.Contains(notExercised[sec], name) {
				t.Errorf("docs/json.md, %s: no output here carried %q", sec, name)
			}
		}
	}
}

// reviewURL waits for the page's URL, which review --json prints on
// stderr.
func reviewURL(t *testing.T, p proc) string {
	t.Helper()
	re := regexp.MustCompile(`airlock: review page: (http://\S+/)\n`)
	deadline := time.Now().Add(commandTimeout)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.Stderr()); m != nil {
			return m[1]
		}
		if p.Ended() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("review printed no URL on stderr:\n%s", p.Stderr())
	return ""
}

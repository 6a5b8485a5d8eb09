package main_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The README and docs/ are tested by their facts, not their sentences:
// every `airlock …` line of their code blocks names a command and flags
// the binary has, every relative link leads to a file (and heading), and
// the README stays a front door whose two commands are the ones CI runs.
// The agents' snippets are run as written (e2e_docs_agents_test.go).

// repoRoot is the repository's top, from this package's directory.
var repoRoot = filepath.Join("..", "..")

// docPages are the Markdown pages a reader is sent to: README.md and
// everything under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// block is one fenced code block of a page.
type block struct {
	lang, text string
	line       int // of the opening fence
}

var fenceRE = regexp.MustCompile("^(```+|~~~+)\\s*([\\w+-]*)")

// fencedBlocks returns the fenced code blocks of a Markdown page.
func fencedBlocks(t *testing.T, page string) []block {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	var fence string
	for i, l := range strings.Split(string(b), "\n") {
		if cur == nil {
			if m := fenceRE.FindStringSubmatch(l); m != nil {
				cur, fence = &block{lang: m[2], line: i + 1}, m[1]
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), fence) && strings.Trim(strings.TrimSpace(l), fence[:1]) == "" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.text += l + "\n"
	}
	if cur != nil {
		t.Fatalf("%s:%d: a code block that never closes", page, cur.line)
	}
	return out
}

// cliCommand is one command of the binary's tree, as its --help shows it.
type cliCommand struct {
	flags map[string]bool // "--json", "-q": whether the flag takes a value
	subs  []string
}

var (
	helpFlagRE = regexp.MustCompile(`^\s+(?:(-[[:alnum:]]), )?(--[[:alnum:]][\w-]*)(?: ([^\s]+))?(?:\s{2,}|$)`)
	// A command name as long as cobra's padding (11: checkpoints) is
	// followed by one space only.
	helpSubRE = regexp.MustCompile(`^\s+([[:alnum:]][\w-]*)(?:\s+|$)`)
)

// cliTree reads the command tree from the binary's own help: each
// command's "Available Commands" and "Flags" (and "Global Flags"), keyed
// by the command path below airlock ("" for airlock itself).
func cliTree(t *testing.T) map[string]*cliCommand {
	t.Helper()
	tree := map[string]*cliCommand{}
	var walk func(path []string)
	walk = func(path []string) {
		r := testbin.Run(t, testbin.Cmd{Bin: airlockBin, Args: append(slices.Clone(path), "--help"),
			Env: testbin.Environ(t.TempDir(), t.TempDir()), Timeout: commandTimeout})
		if r.Code != 0 {
			t.Fatalf("airlock %s --help: %v", strings.Join(path, " "), r)
		}
		c := &cliCommand{flags: map[string]bool{}}
		section := ""
		for _, l := range strings.Split(r.Stdout, "\n") {
			switch {
			case l == "":
				section = ""
			case !strings.HasPrefix(l, " "):
				section = strings.TrimSuffix(l, ":")
			case section == "Available Commands":
				if m := helpSubRE.FindStringSubmatch(l); m != nil {
					c.subs = append(c.subs, m[1])
				}
			case section == "Flags" || section == "Global Flags":
				if m := helpFlagRE.FindStringSubmatch(l); m != nil {
					c.flags[m[2]] = m[3] != ""
					if m[1] != "" {
						c.flags[m[1]] = m[3] != ""
					}
				}
			}
		}
		if len(c.flags) == 0 {
			t.Fatalf("airlock %s --help lists no flags (not even --help): has its format changed?\n%s", strings.Join(path, " "), r.Stdout)
		}
		tree[strings.Join(path, " ")] = c
		for _, s := range c.subs {
			if s != "help" {
				walk(append(slices.Clone(path), s))
			}
		}
	}
	walk(nil)
	return tree
}

// shellWords splits a line as sh would, enough for the docs' examples:
// quotes group, a standalone |, ||, &&, ;, > or < and an unquoted $(, <(, (
// or ) end one command, and # starts a comment. Two spaces or more
// outside quotes end the command too: what follows them in a command
// table is its description. Each command is returned as its words.
func shellWords(line string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	endWord := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			w.WriteRune(rs[i])
			inWord = true
		case r == ' ' || r == '\t':
			endWord()
			if i+1 < len(rs) && rs[i+1] == ' ' {
				endCmd()
				return cmds
			}
		case r == '#' && !inWord:
			endCmd()
			return cmds
		case (r == '$' || r == '<') && i+1 < len(rs) && rs[i+1] == '(', r == '(' || r == ')' || r == ';':
			endCmd()
			if r != '(' && r != ')' && r != ';' {
				i++
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
		// A standalone operator word ends the command (a redirect's
		// target is then not an airlock argument either).
		if !inWord && len(words) > 0 && slices.Contains([]string{"|", "||", "&&", "&", ">", ">>", "<", "2>"}, words[len(words)-1]) {
			op := words[len(words)-1]
			words = words[:len(words)-1]
			endCmd()
			if strings.ContainsAny(op, "<>") {
				words = []string{"<redirect>"}
			}
		}
	}
	endCmd()
	return cmds
}

// checkCommand checks one `airlock …` command (its words after airlock)
// against the tree: each verb is a command, each flag one that command
// has. Usage syntax is read as --help writes it: [optional] words, A|B
// alternatives, ID... repeats and [flags] stand for what they say.
func checkCommand(tree map[string]*cliCommand, args []string) error {
	path := ""
	cur := tree[path]
	verbs := true // the next positional word names a subcommand, if the command has any
	for i := 0; i < len(args); i++ {
		a := strings.TrimRight(strings.TrimLeft(args[i], "["), "]")
		a = strings.TrimSuffix(strings.TrimSuffix(a, "..."), "…")
		switch {
		case a == "--":
			return nil // the rest is COMMAND's
		case a == "" || a == "flags" && args[i] == "[flags]" || a == "command" && args[i] == "[command]":
		case strings.HasPrefix(a, "-") && len(a) > 1:
			alts := strings.Split(a, "|")
			for j, alt := range alts {
				name, _, hasValue := strings.Cut(alt, "=")
				takes, ok := cur.flags[name]
				if !ok {
					return fmt.Errorf("%s has no flag %s", strings.TrimSpace("airlock "+path), name)
				}
				if takes && !hasValue && j == len(alts)-1 {
					i++ // its value
				}
			}
		case verbs && len(cur.subs) > 0:
			for _, alt := range strings.Split(a, "|") {
				if !slices.Contains(cur.subs, alt) {
					return fmt.Errorf("%s has no command %q (it has %s)", strings.TrimSpace("airlock "+path), alt, strings.Join(cur.subs, ", "))
				}
			}
			sub, _, _ := strings.Cut(a, "|")
			path = strings.TrimSpace(path + " " + sub)
			if cur = tree[path]; cur == nil {
				return fmt.Errorf("airlock %s: no help read for it", path)
			}
		default:
			verbs = false
		}
	}
	return nil
}

// airlockLine is one `airlock …` command line a page shows.
type airlockLine struct {
	where string // page:line
	text  string
	args  []string
}

// airlockLines collects the `airlock …` commands of a page: its inline
// code that starts with `airlock `, and its code blocks — shell-like blocks
// line by line, and in JSON and TOML blocks every string that is an
// airlock command ("command": "airlock hook claude stop") or a command
// "airlock" with its "args".
func airlockLines(t *testing.T, page string) []airlockLine {
	t.Helper()
	rel, _ := filepath.Rel(repoRoot, page)
	var out []airlockLine
	for i, l := range prose(t, page) {
		for _, span := range inlineCodeRE.FindAllString(l, -1) {
			span = strings.Trim(span, "`")
			if !strings.HasPrefix(span, "airlock ") {
				continue
			}
			for _, words := range shellWords(span) {
				if words[0] == "airlock" {
					out = append(out, airlockLine{fmt.Sprintf("%s:%d", rel, i+1), span, words[1:]})
				}
			}
		}
	}
	for _, b := range fencedBlocks(t, page) {
		switch b.lang {
		case "", "sh", "bash", "shell", "console":
			for i, l := range strings.Split(b.text, "\n") {
				l = strings.TrimPrefix(strings.TrimSpace(l), "$ ")
				for _, words := range shellWords(l) {
					if words[0] == "airlock" {
						out = append(out, airlockLine{fmt.Sprintf("%s:%d", rel, b.line+1+i), l, words[1:]})
					}
				}
			}
		case "json", "toml":
			var v any
			var err error
			if b.lang == "json" {
				err = json.Unmarshal([]byte(b.text), &v)
			} else {
				var m map[string]any
				_, err = toml.Decode(b.text, &m)
				v = m
			}
			if err != nil {
				t.Errorf("%s:%d: the %s block does not parse: %v", rel, b.line, b.lang, err)
				continue
			}
			for _, argv := range configCommands(v) {
				out = append(out, airlockLine{fmt.Sprintf("%s:%d", rel, b.line), strings.Join(argv, " "), argv[1:]})
			}
		}
	}
	return out
}

// configCommands finds airlock commands in a decoded configuration.
func configCommands(v any) [][]string {
	var out [][]string
	switch v := v.(type) {
	case map[string]any:
		if c, ok := v["command"].(string); ok && c == "airlock" {
			argv := []string{c}
			args, _ := v["args"].([]any)
			for _, a := range args {
				s, _ := a.(string)
				argv = append(argv, s)
			}
			out = append(out, argv)
		}
		for k, e := range v {
			if k != "args" {
				out = append(out, configCommands(e)...)
			}
		}
	case []any:
		if len(v) > 0 && v[0] == "airlock" {
			var argv []string
			for _, a := range v {
				s, _ := a.(string)
				argv = append(argv, s)
			}
			return append(out, argv)
		}
		for _, e := range v {
			out = append(out, configCommands(e)...)
		}
	case string:
		if rest, ok := strings.CutPrefix(v, "airlock "); ok {
			out = append(out, append([]string{"airlock"}, strings.Fields(rest)...))
		}
	}
	return out
}

// TestDocsCommandLinesParse: every `airlock …` line in a code block of
// the README and docs/, and every `airlock …` in their inline code, names
// commands and flags the binary has (read from its own --help), and the
// README's command table names every command.
func TestDocsCommandLinesParse(t *testing.T) {
	tree := cliTree(t)
	n := 0
	for _, page := range docPages(t) {
		for _, l := range airlockLines(t, page) {
			n++
			if err := checkCommand(tree, l.args); err != nil {
				t.Errorf("%s: %s\n\t%s", l.where, err, l.text)
			}
		}
	}
	if n < 50 {
		t.Errorf("found only %d airlock command lines in the docs; is the code block reader broken?", n)
	}
	readme := map[string]bool{}
	for _, l := range airlockLines(t, filepath.Join(repoRoot, "README.md")) {
		if len(l.args) > 0 {
			readme[strings.Trim(l.args[0], "[]")] = true
		}
	}
	for _, sub := range tree[""].subs {
		if sub != "help" && !readme[sub] {
			t.Errorf("README.md's commands name no `airlock %s …`", sub)
		}
	}
}

// TestDocsCommandLineCheckCatches: the checker refuses what a reader
// could not run, so TestDocsCommandLinesParse cannot pass by reading
// nothing.
func TestDocsCommandLineCheckCatches(t *testing.T) {
	tree := cliTree(t)
	for _, line := range []string{
		"airlock comit ID",
		"airlock commit ID --aprove",
		"airlock receipt verfy FILE",
		"airlock diff ID [--stat|--name-stats]",
		"airlock gc --older-than 24h --dryrun   # a typo after a value",
		`d=$(airlock show ID --jsn | jq -r .diff_digest)`,
		"echo '{}' | airlock hook claude stop --nope",
	} {
		var errs int
		for _, words := range shellWords(line) {
			if words[0] == "airlock" && checkCommand(tree, words[1:]) != nil {
				errs++
			}
		}
		if errs != 1 {
			t.Errorf("%q: %d errors, want 1", line, errs)
		}
	}
	for _, line := range []string{
		"airlock run --validate 'go test ./...' -- ./codemod.sh --not-ours",
		"airlock land agent-1 agent-2 --json | jq -r '.transactions[] | \"\\(.tx)\"'",
		"airlock completion bash > ~/.local/share/bash-completion/completions/airlock",
		"airlock hook claude|codex EVENT           hook handlers: --not-a-flag in the description",
		"airlock gc [ID...] [--older-than DUR] [--dry-run] [--drop-pool] [flags]",
	} {
		for _, words := range shellWords(line) {
			if words[0] == "airlock" {
				if err := checkCommand(tree, words[1:]); err != nil {
					t.Errorf("%q: %v", line, err)
				}
			}
		}
	}
}

var (
	linkRE       = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	mdHeadingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// prose is a page without its code blocks and inline code, where links
// and headings are.
func prose(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fence := ""
	for _, l := range strings.Split(string(b), "\n") {
		if m := fenceRE.FindStringSubmatch(l); m != nil && (fence == "" || strings.HasPrefix(m[1], fence)) {
			if fence == "" {
				fence = m[1]
			} else {
				fence = ""
			}
			out = append(out, "")
			continue
		}
		if fence != "" {
			out = append(out, "")
			continue
		}
		out = append(out, l)
	}
	return out
}

// anchors are the ids GitHub gives a page's headings: lower case, spaces
// as hyphens, punctuation but - and _ dropped, -1, -2, … on repeats.
func anchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(t, page) {
		m := mdHeadingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var id strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				id.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				id.WriteRune(r)
			}
		}
		s := id.String()
		if n := seen[s]; n > 0 {
			ids[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			ids[s] = true
		}
		seen[s]++
	}
	return ids
}

// brokenLinks lists a page's relative links that lead nowhere: to no file,
// or to a #fragment no heading of the target has.
func brokenLinks(t *testing.T, page string) []string {
	t.Helper()
	var bad []string
	for i, l := range prose(t, page) {
		for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(l, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
			}
			fi, err := os.Stat(dest)
			switch {
			case err != nil:
				bad = append(bad, fmt.Sprintf("%s:%d: %s: no such file", page, i+1, target))
			case frag != "" && (fi.IsDir() || !strings.HasSuffix(dest, ".md")):
				bad = append(bad, fmt.Sprintf("%s:%d: %s: a #fragment of a file that is not a Markdown page", page, i+1, target))
			case frag != "" && !anchors(t, dest)[frag]:
				bad = append(bad, fmt.Sprintf("%s:%d: %s: %s has no heading #%s", page, i+1, target, file, frag))
			}
		}
	}
	return bad
}

// TestDocsLinksResolve: every relative link of the README and docs/ leads
// to a file, and every #fragment to a heading of it.
func TestDocsLinksResolve(t *testing.T) {
	n := 0
	for _, page := range docPages(t) {
		for _, l := range prose(t, page) {
			n += len(linkRE.FindAllString(l, -1))
		}
		for _, b := range brokenLinks(t, page) {
			t.Error(b)
		}
	}
	if n < 50 {
		t.Errorf("found only %d links in the docs; is the link reader broken?", n)
	}
	// The check itself: a page with a missing file, a missing heading and
	// a good link finds exactly the two bad ones.
	dir := t.TempDir()
	testbin.WriteFiles(t, dir, map[string]string{
		"a.md": "# A\n\n## Its part\n\n[ok](b.md#b) [ok](#its-part) [gone](c.md) [no heading](b.md#nope) `[code](x.md)`\n",
		"b.md": "# B\n",
	})
	if got := brokenLinks(t, filepath.Join(dir, "a.md")); len(got) != 2 ||
		!strings.Contains(got[0], "c.md: no such file") || !strings.Contains(got[1], "has no heading #nope") {
		t.Errorf("the link check found %q, want c.md and b.md#nope", got)
	}
}

// TestReadmeIsAFrontDoor: the README stays short, and its "Try it" block
// holds exactly the two commands a new user runs: scripts/demo.sh, which
// must exist and parse, and the test suite as .ci/run runs it.
func TestReadmeIsAFrontDoor(t *testing.T) {
	readme := filepath.Join(repoRoot, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Errorf("README.md has %d lines; it is the front door, keep it under 300 and move the rest to docs/", n)
	}
	_, try, ok := strings.Cut(string(b), "\n## Try it\n")
	if !ok {
		t.Fatal(`README.md has no "## Try it" section`)
	}
	try, _, _ = strings.Cut(try, "\n## ")
	var cmds []string
	for _, m := range regexp.MustCompile("(?ms)^```\\w*\\n(.*?)^```").FindAllStringSubmatch(try, -1) {
		for _, l := range strings.Split(m[1], "\n") {
			if c, _, _ := strings.Cut(l, "#"); strings.TrimSpace(c) != "" {
				cmds = append(cmds, strings.Join(strings.Fields(c), " "))
			}
		}
	}
	const demo, suite = "bash scripts/demo.sh", "go test -count=1 -tags airlock_faults ./..."
	if !slices.Equal(cmds, []string{demo, suite}) {
		t.Errorf("README.md's Try it runs %q, want exactly %q", cmds, []string{demo, suite})
	}
	ci, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(ci), "\n"), suite) {
		t.Errorf(".ci/run does not run %q, the README's test command", suite)
	}
	if out, err := exec.Command("bash", "-n", filepath.Join(repoRoot, "scripts", "demo.sh")).CombinedOutput(); err != nil {
		t.Errorf("bash -n scripts/demo.sh: %v\n%s", err, out)
	}
}

// TestE2EDocsConfigIsAccepted: the `.airlock.toml` that docs/config.md
// shows, every key in it, is a project config airlock opens under.
func TestE2EDocsConfigIsAccepted(t *testing.T) {
	var shown []string
	for _, b := range fencedBlocks(t, filepath.Join(repoRoot, "docs", "config.md")) {
		if b.lang == "toml" {
			shown = append(shown, b.text)
		}
	}
	if len(shown) != 1 || !strings.Contains(shown[0], "validate =") {
		t.Fatalf("docs/config.md shows %d TOML blocks, want the one .airlock.toml with every key", len(shown))
	}
	x := newH(t)
	build(t, x.base, tree{".airlock.toml": F(0o644, shown[0]), "main.txt": F(0o644, "main\n")})
	r := x.airlock("open", "--workdir", x.base, "--id", "docs-config")
	if r.Code != 0 {
		t.Fatalf("airlock open under docs/config.md's .airlock.toml: %v", r)
	}
	x.airlock("discard", "docs-config")
	// The same file with a key airlock does not know is refused, so the
	// open above accepted the keys, not ignored them.
	build(t, x.base, tree{".airlock.toml": F(0o644, shown[0]+"no_such_key = 1\n")})
	if r := x.airlock("open", "--workdir", x.base); r.Code != 125 {
		t.Errorf("airlock open with an unknown key in .airlock.toml: exit %d, want 125\n%s", r.Code, r)
	}
}

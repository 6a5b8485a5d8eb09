package hook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The guard answers PreToolUse (Claude Code, Codex) and BeforeTool
// (Gemini CLI). Inside a staged workspace an agent's file tools and shell
// can still name the base's absolute paths and edit the real directory,
// outside any transaction. The guard denies such a call and leaves every
// other call alone: it is a tripwire for plain writes, not a sandbox (a
// program that computes its path, a script file, a variable expanded at
// run time are not seen). The hard barrier is `airlock run`'s same-path
// view, where the base's path shows the staged tree.

// Scope is what the guard protects: the base's real path, and the staged
// workspace's, under which writing is the point.
type Scope struct {
	Base, Staged string
}

// writes reports whether the real path p lies in the base but not in the
// staged workspace.
func (s Scope) writes(p string) bool {
	return within(p, s.Base) && !within(p, s.Staged)
}

// Denial is why a tool call must not run.
type Denial struct {
	Tool string
	// Path is the base path the call would write, as resolved (symlinks
	// and .. followed from the session's cwd).
	Path string
	// Why says how the call reaches it, for the reason the agent reads.
	Why string
}

// Reason is the denial in the words an agent reads as its tool's error.
func (d *Denial) Reason(staged string) string {
	return fmt.Sprintf("airlock: %s denied: %s %s, which is in the base of this session's transaction, outside its staged workspace %s. "+
		"Writes there bypass the transaction (no checks, no undo). Make the change under %s instead; it reaches the base when the transaction is committed.",
		d.Tool, d.Why, d.Path, staged, staged)
}

// fileTools name, for each agent's tools that write one file, the input
// field that holds the file's path: Claude Code's (sdk-tools.d.ts:
// FileWriteInput, FileEditInput, NotebookEditInput), Gemini CLI's
// (write_file, replace) and Qwen Code's (write_file, edit, notebook_edit).
var fileTools = map[string]string{
	"Write":         "file_path",
	"Edit":          "file_path",
	"MultiEdit":     "file_path",
	"NotebookEdit":  "notebook_path",
	"write_file":    "file_path",
	"replace":       "file_path",
	"edit":          "file_path",
	"notebook_edit": "notebook_path",
}

// shellTools are the tools that run a shell command, its text in
// tool_input.command: Claude Code's and Codex's Bash, Gemini CLI's and
// Qwen Code's run_shell_command.
var shellTools = map[string]bool{"Bash": true, "run_shell_command": true}

// patchTool is Codex's file editing tool: a patch whose headers name the
// files it adds, updates, deletes and moves to.
const patchTool = "apply_patch"

// GuardCall decides one tool call made in cwd (a real path) of a session
// whose transaction is scope. It returns nil to let the call run.
func GuardCall(tool string, input json.RawMessage, cwd string, scope Scope) *Denial {
	fields := map[string]json.RawMessage{}
	if len(input) > 0 {
		// A tool_input that is not an object names no path a tool writes.
		_ = json.Unmarshal(input, &fields)
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(fields[k], &s)
		return s
	}
	if field, ok := fileTools[tool]; ok {
		p := str(field)
		if p == "" {
			return nil
		}
		if r := resolve(cwd, p); scope.writes(r) {
			return &Denial{Tool: tool, Path: r, Why: "it writes"}
		}
		return nil
	}
	if shellTools[tool] {
		return guardShell(tool, str("command"), cwd, scope)
	}
	if tool == patchTool {
		// The patch's text is its only input; which field holds it has
		// varied, so every string field is read.
		for k := range fields {
			for _, p := range patchPaths(str(k)) {
				if r := resolve(cwd, p); scope.writes(r) {
					return &Denial{Tool: tool, Path: r, Why: "its patch writes"}
				}
			}
		}
	}
	return nil
}

// patchPaths are the paths an apply_patch patch's headers name.
func patchPaths(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), h); ok {
				out = append(out, strings.TrimSpace(p))
			}
		}
	}
	return out
}

// resolve is the real path p names from dir, as the kernel would walk it:
// each existing component's symlink followed where it stands, so that ..
// after a symlink leaves the link's target, not its name. Components that
// do not exist yet (a file a Write creates) are taken as written.
func resolve(dir, p string) string {
	cur := "/"
	if !filepath.IsAbs(p) {
		cur = dir
	}
	rest := strings.Split(p, "/")
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || hops >= 40 {
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			cur = next
			continue
		}
		hops++
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur
}

// readOnly are the commands that write no file named among their
// arguments (their output goes to stdout, which a redirection names):
// such a command may name the base's paths, since reading the base's
// current version of a file is what an agent is told to do on a drift.
var readOnly = map[string]bool{
	"cat": true, "head": true, "tail": true, "less": true, "more": true, "ls": true, "stat": true,
	"file": true, "wc": true, "grep": true, "egrep": true, "fgrep": true, "rg": true, "diff": true,
	"cmp": true, "comm": true, "md5sum": true, "sha1sum": true, "sha256sum": true, "sha512sum": true,
	"cksum": true, "readlink": true, "realpath": true, "basename": true, "dirname": true, "du": true,
	"tree": true, "echo": true, "printf": true, "test": true, "[": true, "true": true, "false": true,
	"pwd": true, "jq": true, "od": true, "hexdump": true, "strings": true, "cut": true, "tr": true,
	"nl": true, "column": true,
}

// readOnlyIf are commands that write only with certain options.
var readOnlyIf = map[string]func(args []string) bool{
	"sed": func(args []string) bool { return !anyArg(args, "-i", "--in-place", "-s") },
	"find": func(args []string) bool {
		return !anyArg(args, "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls")
	},
	"git": func(args []string) bool {
		// Global options, then the subcommand; only these only read.
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-C" || a == "-c":
				i++
			case strings.HasPrefix(a, "-"):
			default:
				switch a {
				case "status", "diff", "log", "show", "blame", "ls-files", "ls-tree", "rev-parse", "grep", "cat-file", "describe", "shortlog":
					return true
				}
				return false
			}
		}
		return true
	},
}

// anyArg reports whether an argument is one of opts, or starts with one
// of them (sed's -i.bak, --in-place=.bak).
func anyArg(args []string, opts ...string) bool {
	for _, a := range args {
		for _, o := range opts {
			if a == o || (strings.HasPrefix(a, o) && (strings.HasPrefix(o, "--") || len(o) == 2)) {
				return true
			}
		}
	}
	return false
}

// guardShell applies the shell rule. A command line cannot be parsed
// exactly (variables, scripts and programs choose paths at run time), so
// the rule is a plain one over what the text names: an absolute path (or
// ~/…, $HOME/…), or a relative one resolved from the session's cwd (or
// the directory a cd before it named), that lies in the base outside the
// staged workspace. Such a path is denied as the target of an output
// redirection, anywhere in a pipeline one of whose commands is not known
// to only read (readOnly; cp copying out of the base is reading it), as
// a variable's value, and anywhere in a line that substitutes a command
// (`…`, $(…), <(…), >(…)), whose inner command is not followed.
func guardShell(tool, command, cwd string, scope Scope) *Denial {
	subst := strings.Contains(command, "$(") || strings.Contains(command, "`") || strings.Contains(command, "<(") || strings.Contains(command, ">(")
	home, _ := os.UserHomeDir()
	base := func(dir, word string) string {
		for _, c := range candidates(word, home) {
			if r := resolve(dir, c); scope.writes(r) {
				return r
			}
		}
		return ""
	}
	dir := cwd
	for _, pipe := range lexShell(command) {
		named, writer := "", false
		for _, seg := range pipe {
			for _, w := range seg.redirects {
				if p := base(dir, w); p != "" {
					return &Denial{Tool: tool, Path: p, Why: "its command redirects output to"}
				}
			}
			args := seg.words
			assigns := 0
			for assigns < len(args) && isAssignment(args[assigns]) {
				assigns++
			}
			for _, w := range args[:assigns] {
				if p := base(dir, w); p != "" {
					return &Denial{Tool: tool, Path: p, Why: "its command sets a variable to"}
				}
			}
			args = args[assigns:]
			if len(args) == 0 {
				continue
			}
			name := filepath.Base(args[0])
			for _, w := range args[1:] {
				if p := base(dir, w); p != "" && named == "" {
					named = p
				}
			}
			switch {
			case readOnly[name]:
			case readOnlyIf[name] != nil && readOnlyIf[name](args[1:]):
			case name == "cp" && cpReadsBase(args[1:], func(w string) bool { return base(dir, w) != "" }):
			default:
				writer = true
			}
			if (name == "cd" || name == "pushd") && len(args) > 1 {
				// What follows runs there.
				dir = resolve(dir, expandHome(args[len(args)-1], home))
			}
		}
		if named != "" && (writer || subst) {
			why := "its command, which airlock does not know to only read, names"
			if subst {
				why = "its command substitutes a command and names"
			}
			return &Denial{Tool: tool, Path: named, Why: why}
		}
	}
	return nil
}

// cpReadsBase reports whether cp only copies out of the base: its
// destination (the last operand, or -t DIR) is not in it.
func cpReadsBase(args []string, inBase func(string) bool) bool {
	var ops []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-t" || a == "--target-directory":
			if i+1 < len(args) {
				return !inBase(args[i+1])
			}
		case strings.HasPrefix(a, "--target-directory="):
			return !inBase(strings.TrimPrefix(a, "--target-directory="))
		case strings.HasPrefix(a, "-"):
		default:
			ops = append(ops, a)
		}
	}
	return len(ops) > 1 && !inBase(ops[len(ops)-1])
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(w string) bool { return assignment.MatchString(w) }

// embedded finds paths inside a word: after a space (a quoted `sh -c`
// script), =, :, or a comma.
var embedded = regexp.MustCompile(`(?:^|[\s=:,])((?:~|\$HOME|\$\{HOME\})?/[^\s:,;|&<>()'"]*)`)

// candidates are the paths a word may name: the word itself (unless an
// option), and every absolute path inside it.
func candidates(word, home string) []string {
	var out []string
	if word != "" && !strings.HasPrefix(word, "-") && !strings.ContainsAny(word, " \t\n$") {
		out = append(out, expandHome(word, home))
	}
	for _, m := range embedded.FindAllStringSubmatch(word, -1) {
		out = append(out, expandHome(m[1], home))
	}
	return out
}

// expandHome expands a leading ~, $HOME or ${HOME}.
func expandHome(w, home string) string {
	if home == "" {
		return w
	}
	for _, pre := range []string{"~", "$HOME", "${HOME}"} {
		if w == pre || strings.HasPrefix(w, pre+"/") {
			return home + strings.TrimPrefix(w, pre)
		}
	}
	return w
}

// segment is one simple command: its words (quotes removed) and the
// targets of its output redirections.
type segment struct {
	words, redirects []string
}

// lexShell splits a command line into pipelines of simple commands. It
// knows quotes, backslashes, the control operators and redirections; it
// expands nothing.
func lexShell(s string) [][]segment {
	var pipes [][]segment
	var pipe []segment
	var seg segment
	var word strings.Builder
	inWord, redirect := false, false
	endWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		if redirect {
			redirect = false
			if w != "-" && strings.Trim(w, "0123456789") != "" {
				seg.redirects = append(seg.redirects, w)
			}
			return
		}
		seg.words = append(seg.words, w)
	}
	endSeg := func() {
		endWord()
		if len(seg.words) > 0 || len(seg.redirects) > 0 {
			pipe = append(pipe, seg)
		}
		seg = segment{}
	}
	endPipe := func() {
		endSeg()
		if len(pipe) > 0 {
			pipes = append(pipes, pipe)
		}
		pipe = nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			word.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			word.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				word.WriteByte(s[i])
			}
			inWord = true
		case c == ' ' || c == '\t':
			endWord()
		case c == '\n' || c == ';' || c == '(' || c == ')' || c == '{' && !inWord || c == '}' && !inWord:
			endPipe()
		case c == '&':
			if i+1 < len(s) && s[i+1] == '>' {
				// &> and &>> redirect both streams to a file.
				endWord()
				i++
				if i+1 < len(s) && s[i+1] == '>' {
					i++
				}
				redirect = true
				continue
			}
			if i+1 < len(s) && s[i+1] == '&' {
				i++
			}
			endPipe()
		case c == '|':
			if i+1 < len(s) && s[i+1] == '|' {
				i++
				endPipe()
				continue
			}
			endSeg()
		case c == '>':
			// A file descriptor number just before is part of the operator.
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset()
				inWord = false
			}
			endWord()
			for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '|' || s[i+1] == '&') {
				i++
			}
			redirect = true
		case c == '<':
			// Input is read, not written: the word after is an argument.
			endWord()
			for i+1 < len(s) && s[i+1] == '<' {
				i++
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endPipe()
	return pipes
}

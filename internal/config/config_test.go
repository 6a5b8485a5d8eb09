package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeConfig(t *testing.T, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, FileName)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadAbsent(t *testing.T) {
	c, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("absent config = %+v, want the defaults %+v", c, Default())
	}
	if !c.DefaultExcludes || !c.DefaultProtect || c.Backend != "auto" || c.Hooks.Stop != StopCheck || c.Path != "" {
		t.Errorf("defaults are not what the schema documents: %+v", c)
	}
}

func TestLoadValid(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Config
	}{
		{"empty", "", *Default()},
		{"comments only", "# nothing here\n\n", *Default()},
		{"full", `exclude = ["node_modules/", "*.log"]   # added to the defaults
protect = ["secrets/**"]
default_excludes = false
default_protect = false
backend = "copy"
validate = "go test ./..."
[hooks]
stop = "commit"
`, Config{Exclude: []string{"node_modules/", "*.log"}, Protect: []string{"secrets/**"}, Backend: "copy",
			Validate: "go test ./...", GCKeep: DefaultGCKeep, Hooks: Hooks{Stop: StopCommit}}},
		{"gc_keep in days", "gc_keep = \"14d\"\n", Config{GCKeep: 14 * 24 * time.Hour, DefaultExcludes: true, DefaultProtect: true, Backend: "auto", Hooks: Hooks{Stop: StopCheck}}},
		{"gc_keep in Go's form", "gc_keep = \"36h30m\"\n", Config{GCKeep: 36*time.Hour + 30*time.Minute, DefaultExcludes: true, DefaultProtect: true, Backend: "auto", Hooks: Hooks{Stop: StopCheck}}},
		{"gc_keep zero", "gc_keep = \"0\"\n", Config{DefaultExcludes: true, DefaultProtect: true, Backend: "auto", Hooks: Hooks{Stop: StopCheck}}},
		{"agents approve", "agents_approve = true\n", Config{AgentsApprove: true, DefaultExcludes: true, DefaultProtect: true, Backend: "auto", GCKeep: DefaultGCKeep, Hooks: Hooks{Stop: StopCheck}}},
		{"dotted hooks key", "hooks.stop = 'off'\n", Config{DefaultExcludes: true, DefaultProtect: true, Backend: "auto", GCKeep: DefaultGCKeep, Hooks: Hooks{Stop: StopOff}}},
		{"empty backend is auto", "backend = \"\"\n", *Default()},
		{"negated selector", "exclude = [\"*.log\", \"!keep.log\"]\n", Config{Exclude: []string{"*.log", "!keep.log"}, DefaultExcludes: true, DefaultProtect: true, Backend: "auto", GCKeep: DefaultGCKeep, Hooks: Hooks{Stop: StopCheck}}},
		{"multi-line validate", "validate = \"\"\"\nmake test\n\"\"\"\n", Config{Validate: "make test", DefaultExcludes: true, DefaultProtect: true, Backend: "auto", GCKeep: DefaultGCKeep, Hooks: Hooks{Stop: StopCheck}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeConfig(t, dir, tt.text)
			c, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Path = p
			if !reflect.DeepEqual(*c, tt.want) {
				t.Errorf("Load =\n %+v\nwant\n %+v", *c, tt.want)
			}
		})
	}
}

func TestLoadMalformed(t *testing.T) {
	tests := []struct {
		name string
		text string
		line int
		key  string // "" when none is named
		msg  string // a part of the message
	}{
		{"syntax: missing value", "backend = \"copy\"\nvalidate = \n", 2, "validate", "invalid TOML"},
		{"syntax: unclosed array", "exclude = [\"a\",\n", 1, "exclude", "invalid TOML"},
		{"duplicate key", "exclude = [\"a\"]\nexclude = [\"b\"]\n", 2, "exclude", "already been defined"},
		{"exclude is a string", "\n\nexclude = \"node_modules/\"\n", 3, "exclude", "wants an array of strings"},
		{"protect holds a number", "protect = [1]\n", 1, "protect", "wants an array of strings"},
		{"default_excludes is a string", "default_excludes = \"no\"\n", 1, "default_excludes", "wants true or false"},
		{"agents_approve is a string", "agents_approve = \"yes\"\n", 1, "agents_approve", "wants true or false"},
		{"gc_keep is a number", "gc_keep = 7\n", 1, "gc_keep", `wants a duration in a string, such as "7d"`},
		{"gc_keep is no duration", "validate = 'x'\ngc_keep = \"a week\"\n", 2, "gc_keep", `"a week" is not a duration`},
		{"gc_keep in weeks", "gc_keep = \"1w\"\n", 1, "gc_keep", `"1w" is not a duration`},
		{"gc_keep fractional days", "gc_keep = \"1.5d\"\n", 1, "gc_keep", "whole number"},
		{"gc_keep negative", "gc_keep = \"-1h\"\n", 1, "gc_keep", "negative"},
		{"hooks is a number", "hooks = 3\n", 1, "hooks", "wants a table"},
		{"hooks.stop is a number", "[hooks]\n\nstop = 1\n", 3, "hooks.stop", "wants a string"},
		{"unknown backend", "validate = \"true\"\nbackend = \"fast\"\n", 2, "backend", `unknown backend "fast"`},
		{"unknown stop", "[hooks]\nstop = \"always\"\n", 2, "hooks.stop", `unknown stop behaviour "always"`},
		{"bad exclude selector", "exclude = [\"ok/\", \"#comment\"]\n", 1, "exclude", `selector "#comment"`},
		{"bad protect selector", "\nprotect = [\"[unclosed\"]\n", 2, "protect", `selector "[unclosed"`},
		{"empty selector", "exclude = [\"\"]\n", 1, "exclude", "empty"},
		{"blank validate", "validate = \"   \"\n", 1, "validate", "blank"},
		{"unknown top-level key", "backend = \"copy\"\nexlude = [\"a\"]\n", 2, "exlude", "unknown key"},
		{"unknown key in hooks", "[hooks]\nstop = \"check\"\nstart = \"x\"\n", 3, "hooks.start", "unknown key"},
		{"unknown dotted key", "validate = 'x'\nhooks.stopp = 'check'\n", 2, "hooks.stopp", "unknown key"},
		{"unknown table", "[hook]\nstop = \"check\"\n", 1, "hook", "unknown key"},
		{"unknown key in an inline table", "hooks = { stop = \"check\", when = 1 }\n", 1, "hooks.when", "unknown key"},
		{"unknown key after a multi-line array", "exclude = [\n  \"a\",\n  \"b\",\n]\nextra = 1\n", 5, "extra", "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeConfig(t, dir, tt.text)
			c, err := Load(dir)
			if err == nil {
				t.Fatalf("Load accepted %q: %+v", tt.text, c)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *config.Error", err)
			}
			if ce.File != p || ce.Line != tt.line || ce.Key != tt.key {
				t.Errorf("error names %s:%d key %s, want %s:%d key %s (%v)", ce.File, ce.Line, ce.Key, p, tt.line, tt.key, err)
			}
			msg := err.Error()
			for _, part := range []string{p + ":" + strconv.Itoa(tt.line) + ":", "key " + strconv.Quote(tt.key), tt.msg} {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q does not contain %q", msg, part)
				}
			}
		})
	}
}

func TestLoadNotARegularFile(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, dir, p string)
		msg  string
	}{
		{"symlink to a valid config", func(t *testing.T, dir, p string) {
			target := filepath.Join(t.TempDir(), "real.toml")
			if err := os.WriteFile(target, []byte("backend = \"copy\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, "is a symlink"},
		{"dangling symlink", func(t *testing.T, dir, p string) {
			if err := os.Symlink("nowhere.toml", p); err != nil {
				t.Fatal(err)
			}
		}, "is a symlink"},
		{"directory", func(t *testing.T, dir, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "is a directory"},
		{"FIFO", func(t *testing.T, dir, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "is a FIFO"},
		{"too large", func(t *testing.T, dir, p string) {
			if err := os.WriteFile(p, []byte("#"+strings.Repeat(" ", maxSize)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "is larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, FileName)
			tt.make(t, dir, p)
			c, err := Load(dir)
			if err == nil {
				t.Fatalf("Load accepted it: %+v", c)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File != p {
				t.Fatalf("error %v does not name %s", err, p)
			}
			if !strings.Contains(err.Error(), p+": "+tt.msg) {
				t.Errorf("message %q does not say %q", err, p+": "+tt.msg)
			}
		})
	}
}

func TestKeyLine(t *testing.T) {
	src := "# header\n" +
		"validate = \"\"\"\n" +
		"exclude = ['x']\n" + // inside a multi-line string: not a key
		"\"\"\"\n" +
		"exclude = [\n" +
		"  \"protect = 1\",\n" + // inside an array: not a key
		"]\n" +
		"\"quoted.key\" = 1\n" +
		"[hooks]\n" +
		"  stop = 'check' # trailing\n" +
		"[[list]]\n" +
		"a.b = 1\n"
	tests := []struct {
		key  []string
		line int
	}{
		{[]string{"validate"}, 2},
		{[]string{"exclude"}, 5},
		{[]string{"protect"}, 0},
		{[]string{"quoted.key"}, 8},
		{[]string{"hooks"}, 9},
		{[]string{"hooks", "stop"}, 10},
		{[]string{"hooks", "other"}, 9},
		{[]string{"list", "a", "b"}, 12},
	}
	for _, tt := range tests {
		if got := keyLine(src, tt.key); got != tt.line {
			t.Errorf("keyLine(%q) = %d, want %d", tt.key, got, tt.line)
		}
	}
}

package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/selector"
)

// FileName is the config's name at the base root.
const FileName = ".airlock.toml"

// maxSize bounds what Load reads: a config is a few lines, and a huge file
// at that name is a mistake, not a config.
const maxSize = 1 << 20

// StopMode is what an agent's stop hook does.
type StopMode string

const (
	StopCheck  StopMode = "check"  // run the checks and validate; block the agent on a refusal
	StopCommit StopMode = "commit" // commit the transaction on stop
	StopOff    StopMode = "off"    // do nothing
)

// Backends are the values backend accepts.
var Backends = []string{"auto", "copy", "reflink", "overlay", "worktree"}

// Config is a project's airlock config.
type Config struct {
	// Path is the file the config was read from; "" when the base has none.
	Path            string
	Exclude         []string // added to the default excludes
	Protect         []string // added to the default protected selectors
	DefaultExcludes bool     // keep the default excludes (agent noise)
	DefaultProtect  bool     // keep the default protected selectors
	Backend         string   // "auto" or a backend name
	Validate        string   // the default validate command; "" means none
	// ValidateEnv names the variables of the committing process's
	// environment that the project's validator gets beyond the few it always gets (PATH,
	// HOME, the locale, ...): it does not run with the caller's
	// whole environment, which could neutralise it (MAKEFLAGS=n).
	ValidateEnv []string
	// AgentsApprove lets an agent's own approval of protected changes
	// stand (the MCP commit tool's approve: true, with no person asked):
	// the project says its agents may change what protection holds.
	AgentsApprove bool
	// GCKeep is how long a plain gc keeps a settled transaction over a
	// base this config governs (its undo data and receipt), counted from
	// when it settled; DefaultGCKeep when the file does not say.
	GCKeep time.Duration
	Hooks  Hooks
}

// DefaultGCKeep is gc's grace where no gc_keep says otherwise: a week, as
// long as a person may take to notice a commit they want undone (git
// keeps an unreachable reflog entry 30 days, a reachable one 90; airlock
// keeps copies of whole files, so less).
const DefaultGCKeep = 7 * 24 * time.Hour

// Hooks configures the agent hooks.
type Hooks struct {
	Stop StopMode
}

// Default is the config of a base without .airlock.toml.
func Default() *Config {
	return &Config{DefaultExcludes: true, DefaultProtect: true, Backend: "auto", GCKeep: DefaultGCKeep, Hooks: Hooks{Stop: StopCheck}}
}

// Error is a config that cannot be used: it names the file, the line (0
// when unknown) and the key ("" when the file as a whole is wrong).
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
	Err  error // the underlying error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("project config ")
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %q", e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// raw is the file's shape; pointers tell an absent key from a zero one.
type raw struct {
	Exclude         []string `toml:"exclude"`
	Protect         []string `toml:"protect"`
	DefaultExcludes *bool    `toml:"default_excludes"`
	DefaultProtect  *bool    `toml:"default_protect"`
	Backend         *string  `toml:"backend"`
	Validate        *string  `toml:"validate"`
	ValidateEnv     []string `toml:"validate_env"`
	AgentsApprove   *bool    `toml:"agents_approve"`
	GCKeep          *string  `toml:"gc_keep"`
	Hooks           struct {
		Stop *string `toml:"stop"`
	} `toml:"hooks"`
}

// Load reads base/.airlock.toml. A base without one gets Default() and a
// nil error. The file is opened without following a symlink and must be a
// regular file; any problem with it is an *Error.
func Load(base string) (*Config, error) {
	path := filepath.Join(base, FileName)
	data, err := read(path)
	if errors.Is(err, os.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// read opens path with O_NOFOLLOW: the base's config must be the base's
// own file, not a link the agent or anyone else planted to a file outside
// it. O_NONBLOCK keeps a FIFO at that name from hanging the open.
func read(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if errors.Is(err, syscall.ELOOP) {
			return nil, &Error{File: path, Msg: "is a symlink; airlock reads its config only from a regular file at the base root: replace the link with the file itself", Err: err}
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot be opened: %v", unwrapPath(err)), Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot be read: %v", unwrapPath(err)), Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: fmt.Sprintf("is %s, not a regular file; remove it or make it the config file", safefs.TypeName(fi.Mode()))}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot be read: %v", unwrapPath(err)), Err: err}
	}
	if len(data) > maxSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("is larger than %d bytes; a config is a few lines", maxSize)}
	}
	return data, nil
}

// Parse reads a config from data; path names it in errors.
func Parse(path string, data []byte) (*Config, error) {
	src := string(data)
	var r raw
	md, err := toml.Decode(src, &r)
	if err != nil {
		return nil, decodeError(path, src, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return nil, &Error{File: path, Line: keyLine(src, k), Key: k.String(),
			Msg: "unknown key; the keys are exclude, protect, default_excludes, default_protect, backend, validate, validate_env, agents_approve, gc_keep and [hooks] stop"}
	}
	c := Default()
	c.Path = path
	fail := func(key, msg string, err error) error {
		return &Error{File: path, Line: keyLine(src, splitKey(key)), Key: key, Msg: msg, Err: err}
	}
	for _, sel := range []struct {
		key  string
		list []string
		dst  *[]string
	}{{"exclude", r.Exclude, &c.Exclude}, {"protect", r.Protect, &c.Protect}} {
		if _, err := selector.New(sel.list); err != nil {
			return nil, fail(sel.key, err.Error(), err)
		}
		*sel.dst = sel.list
	}
	if r.DefaultExcludes != nil {
		c.DefaultExcludes = *r.DefaultExcludes
	}
	if r.DefaultProtect != nil {
		c.DefaultProtect = *r.DefaultProtect
	}
	if r.Backend != nil {
		b := *r.Backend
		if b == "" {
			b = "auto"
		}
		ok := false
		for _, k := range Backends {
			ok = ok || b == k
		}
		if !ok {
			return nil, fail("backend", fmt.Sprintf("unknown backend %q (want %s)", *r.Backend, strings.Join(Backends, ", ")), nil)
		}
		c.Backend = b
	}
	if r.Validate != nil {
		c.Validate = strings.TrimSpace(*r.Validate)
		if c.Validate == "" && *r.Validate != "" {
			return nil, fail("validate", "is blank; remove the key for no validation", nil)
		}
	}
	for _, k := range r.ValidateEnv {
		if !envName(k) {
			return nil, fail("validate_env", fmt.Sprintf("%q is not an environment variable name (letters, digits and _, not starting with a digit)", k), nil)
		}
	}
	c.ValidateEnv = r.ValidateEnv
	if r.AgentsApprove != nil {
		c.AgentsApprove = *r.AgentsApprove
	}
	if r.GCKeep != nil {
		d, err := ParseDuration(*r.GCKeep)
		if err != nil {
			return nil, fail("gc_keep", err.Error()+"; gc keeps a settled transaction this long (the default is \"7d\")", err)
		}
		c.GCKeep = d
	}
	if r.Hooks.Stop != nil {
		switch m := StopMode(*r.Hooks.Stop); m {
		case StopCheck, StopCommit, StopOff:
			c.Hooks.Stop = m
		default:
			return nil, fail("hooks.stop", fmt.Sprintf("unknown stop behaviour %q (want check, commit or off)", *r.Hooks.Stop), nil)
		}
	}
	return c, nil
}

// envName reports whether k is a name a shell takes for an environment
// variable: a letter or underscore, then letters, digits and underscores.
func envName(k string) bool {
	for i, c := range k {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return k != ""
}

// typeErr matches the decoder's type errors, which carry the line and key
// only in their text: "toml: line 2 (last key "hooks.stop"): incompatible
// types: ...". Compiled when first needed, not as every start of the
// binary (the launch helper's among them) initializes this package.
var typeErr = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^toml: line (\d+) \(last key "((?:[^"\\]|\\.)*)"\): (.*)$`)
})

func decodeError(path, src string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		e := &Error{File: path, Line: pe.Position.Line, Msg: "invalid TOML: " + pe.Message, Err: err}
		if pe.LastKey != "" {
			e.Key = pe.LastKey
		}
		return e
	}
	if m := typeErr().FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		key := m[2]
		return &Error{File: path, Line: line, Key: key, Msg: typeMsg(key, m[3]), Err: err}
	}
	return &Error{File: path, Msg: err.Error(), Err: err}
}

// typeMsg says what the key wants, after what the decoder found.
func typeMsg(key, found string) string {
	want := map[string]string{
		"exclude": "an array of strings", "protect": "an array of strings",
		"default_excludes": "true or false", "default_protect": "true or false",
		"backend": "a string", "validate": "a string", "validate_env": "an array of strings", "agents_approve": "true or false", "gc_keep": "a duration in a string, such as \"7d\" or \"36h\"", "hooks": "a table", "hooks.stop": "a string",
	}[key]
	if want == "" {
		return found
	}
	return fmt.Sprintf("wants %s (%s)", want, found)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

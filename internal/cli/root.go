package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/buildinfo"
	"github.com/airlockdev/airlock/internal/commandline"
	"github.com/airlockdev/airlock/internal/progress"
)

// IO is where a command reads and writes; tests substitute buffers.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// ErrTerminal says stderr is a terminal: progress goes there only then.
	ErrTerminal bool
}

// Main runs airlock with args (without the program name) and returns the
// exit code.
func Main(ctx context.Context, args []string, io IO) int {
	root := newRoot(io)
	// Long staging and commits draw a progress line, and run says what it
	// is doing on it; --quiet too turns it off.
	meter := &progress.Terminal{W: io.Err}
	if io.ErrTerminal {
		ctx = progress.With(ctx, meter)
		root.PersistentPreRun = func(c *cobra.Command, _ []string) {
			if q, err := c.Flags().GetBool("quiet"); err == nil && q {
				meter.Disable()
			}
		}
	}
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	err := root.ExecuteContext(ctx)
	// Erase the line before the message, which would otherwise be written
	// after "airlock: staging ." on the same line.
	meter.Close()
	if err != nil && !silent(err) {
		fmt.Fprintf(io.Err, "airlock: %s\n", commandline.Message(err))
	}
	return ExitCode(err)
}

// Command is airlock's command tree with nothing to read and nowhere to
// write, for tools that document it: scripts/release makes the man pages
// and completion scripts of a release from it.
func Command() *cobra.Command {
	return newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
}

func newRoot(io IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "airlock",
		Short:         "Transactions over a directory for coding agents",
		Long:          "airlock runs a command in a staged copy of a directory and applies its changes\nback only through one all-or-nothing, fail-closed, journaled commit.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// Now rather than when run, so that docs/cli and the man pages list it.
	root.InitDefaultVersionFlag()
	group(root)
	// Flag errors are airlock failing to start: exit 125 with the message.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see `%s --help`)", err, c.CommandPath())
	})
	root.AddCommand(
		newRunCmd(io),
		newOpenCmd(io),
		newCommitCmd(io),
		newDiscardCmd(io),
		newRecoverCmd(io),
		newReceiptCmd(io),
		newListCmd(io),
		newShowCmd(io),
		newDiffCmd(io),
		newLogCmd(io),
		newUndoCmd(io),
		newLandCmd(io),
		newRebaseCmd(io),
		// Checkpoints inside a transaction (checkpoint, checkpoints, rewind).
		newCheckpointCmd(io),
		newCheckpointsCmd(io),
		newRewindCmd(io),
		newGCCmd(io),
		newDoctorCmd(io),
		newHookCmd(io),
		newInitCmd(io),
		newReviewCmd(io),
		newMCPCmd(io),
		newCompletionCmd(io),
		newVersionCmd(io),
	)
	completeTxIDs(root)
	addExamples(root)
	examplesLast(root)
	return root
}

// examplesLast moves the examples of every command's help to its end,
// after the flags, where the README says they are and where a reader who
// scrolled past the flags finds them.
func examplesLast(root *cobra.Command) {
	const ex = "{{if .HasExample}}\n\nExamples:\n{{.Example}}{{end}}"
	t := root.UsageTemplate()
	if !strings.Contains(t, ex) {
		return // another cobra's template: TestHelpEndsWithExamples says so
	}
	t = strings.Replace(t, ex, "", 1)
	root.SetUsageTemplate(strings.TrimSuffix(t, "\n") + ex + "\n")
}

// group makes c, a command that only holds subcommands, print its help
// when called alone and refuse a word that names none of them, with the
// help to read. Left to cobra, an unknown word under a group prints the
// help and exits 0, and one at the top names no help at all.
func group(c *cobra.Command) {
	c.SuggestionsMinimumDistance = 2
	c.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", s[0])
		}
		return fmt.Errorf("%s (see `%s --help`)", msg, c.CommandPath())
	}
	c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
}

// oneID checks that a command that acts on one transaction got exactly one
// id, and says so in words when it did not.
func oneID(c *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return fmt.Errorf("%s needs a transaction ID (airlock list shows them)", c.Name())
	case len(args) > 1:
		return fmt.Errorf("%s takes one transaction ID, not %d", c.Name(), len(args))
	}
	return nil
}

// store opens the state root named by the environment.
func store() (*airlock.Store, error) { return airlock.OpenStore("") }

// openTx opens transaction id of the state root: what every command that
// names one transaction starts with.
func openTx(id string) (*airlock.Tx, error) {
	st, err := store()
	if err != nil {
		return nil, err
	}
	return st.Tx(id)
}

// txFlags are the flags `run` and `open` share; each registers its own
// --quiet (run's is a settling command's, with --block).
type txFlags struct {
	flags            *pflag.FlagSet // to tell --id "" from no --id
	workdir          string
	exclude, protect []string
	noDefaultProtect bool
	approve          bool
	backend          string
	fresh            bool
	validate         string
	id               string
	receipt          string
	out              output
}

func (f *txFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.workdir, "workdir", "", "the base directory (default: the current directory)")
	fl.StringArrayVar(&f.exclude, "exclude", nil, "gitignore-style selector not copied into the staged workspace (repeatable)")
	fl.StringArrayVar(&f.protect, "protect", nil, "gitignore-style selector whose changes need --approve (repeatable)")
	fl.BoolVar(&f.noDefaultProtect, "no-default-protect", false, "drop the default protected selectors ("+strings.Join(airlock.DefaultProtect, ", ")+") from this transaction's own list; the project's protection, defaults included unless its .airlock.toml sets default_protect = false, still holds at commit")
	fl.BoolVar(&f.approve, "approve", false, "approve changes to protected paths")
	fl.StringVar(&f.backend, "backend", "auto", "how the staged workspace is made: auto|copy|reflink|overlay|worktree")
	fl.BoolVar(&f.fresh, "fresh", false, "copy the base afresh instead of recycling a pooled staged tree (backend copy)")
	c.RegisterFlagCompletionFunc("backend", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, b := range backends {
			if strings.HasPrefix(b[0], prefix) {
				out = append(out, cobra.CompletionWithDesc(b[0], b[1]))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	fl.StringVar(&f.validate, "validate", "", validateHelp)
	fl.StringVar(&f.id, "id", "", "the transaction id ([A-Za-z0-9._-]{1,64}; default: generated)")
	f.flags = fl
	fl.StringVar(&f.receipt, "receipt", "", "also write the receipt JSON to `FILE`")
}

func (f *txFlags) check() error {
	if f.flags != nil && f.flags.Changed("id") && f.id == "" {
		return errors.New(`--id "": an empty id is not an id; leave --id out to have one generated`)
	}
	if f.backend == "" {
		return nil
	}
	for _, b := range backends {
		if b[0] == f.backend {
			return nil
		}
	}
	return fmt.Errorf("--backend %q: unknown backend (want auto, copy, reflink, overlay or worktree)", f.backend)
}

// backends are --backend's values, with what the shell's completion shows
// beside each.
var backends = [][2]string{
	{"auto", "the best this machine and base support (airlock doctor says which)"},
	{"copy", "a full copy of the base; works everywhere"},
	{"reflink", "a copy-on-write clone (btrfs, xfs, APFS)"},
	{"overlay", "a Linux overlayfs over the base"},
	{"worktree", "a git worktree of the base's repository, on branch airlock/<id>"},
}

func (f *txFlags) openOptions(command []string) airlock.OpenOptions {
	return airlock.OpenOptions{
		Base: f.workdir, Exclude: f.exclude, Protect: f.protect,
		NoDefaultProtect: f.noDefaultProtect, Backend: f.backend, Fresh: f.fresh, ID: f.id, Command: command,
	}
}

// receiptPath makes --receipt absolute now, before a command may change
// directory.
func receiptPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if strings.HasPrefix(p, "/") {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return wd + "/" + p, nil
}

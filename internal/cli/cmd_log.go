package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// logOptions are log's flags.
type logOptions struct {
	workdir, remote, branch string
	allowedSigners          string
	json                    bool
	limits                  remoteLimitFlags
}

func newLogCmd(io IO) *cobra.Command {
	var o logOptions
	c := &cobra.Command{
		Use:   "log [--workdir DIR] [--remote REMOTE --branch BRANCH] [--json]",
		Short: "The transactions committed to this base (or landed into a remote branch), newest first",
		Long: `The transactions committed to this base (or landed into a remote branch), newest first.

Each line: when it settled, its id, its counts, its receipt's digest, the
command that made it (cut at 60 characters; "(airlock open)" where none
ran), and its marks: "(undo of ID)", "(undone by ID)", and "(no undo: gc
removed its state)", "(signed by PRINCIPAL (key SHA256:...))". --json has
every receipt whole. A signed receipt must be signed by a key the allowed
signers file lists (--allowed-signers, else gpg.ssh.allowedSignersFile).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runLog(c.Context(), io, o)
		},
	}
	c.Flags().StringVar(&o.workdir, "workdir", "", "the base directory (default: the current directory); with --remote, the repository whose remotes REMOTE may name")
	c.Flags().BoolVar(&o.json, "json", false, "print the chain as JSON")
	c.Flags().StringVar(&o.remote, "remote", "", "list what was landed into a git remote: a remote name or a URL (with --branch)")
	c.Flags().StringVar(&o.branch, "branch", "", "the remote branch whose landings to list (with --remote)")
	o.limits.register(c)
	c.Flags().StringVar(&o.allowedSigners, "allowed-signers", "", "the allowed signers file (ssh-keygen's format) signed receipts are checked against (default: gpg.ssh.allowedSignersFile)")
	return c
}

func runLog(ctx context.Context, io IO, o logOptions) error {
	if (o.remote == "") != (o.branch == "") {
		return errors.New("--remote and --branch go together: name the remote and the branch whose landings to list")
	}
	limits, err := o.limits.limits(o.remote)
	if err != nil {
		return err
	}
	if err := checkAllowedSigners(o.allowedSigners); err != nil {
		return err
	}
	st, err := store()
	if err != nil {
		return err
	}
	if o.remote != "" {
		return remoteLog(ctx, io, st, airlock.RemoteLogOptions{Dir: o.workdir, Remote: o.remote, Branch: o.branch, Limits: limits, AllowedSigners: o.allowedSigners}, o.json)
	}
	lg, err := st.Log(o.workdir)
	if err != nil {
		return err
	}
	if err := st.CheckSignatures(ctx, lg, o.allowedSigners); err != nil {
		return err
	}
	if o.json {
		if err := writeJSON(io, jsonout.NewLog(lg)); err != nil {
			return err
		}
	} else {
		undoneBy := map[string]string{}
		for _, r := range lg.Entries {
			if r.Undoes != "" {
				undoneBy[r.Undoes] = r.TxID
			}
		}
		for i, r := range lg.Entries {
			mark := ""
			if r.Undoes != "" {
				mark += "  (undo of " + r.Undoes + ")"
			}
			if r.PartOf != "" {
				mark += "  (part of " + r.PartOf + ": " + commandline.QuotePaths(r.Paths, 3) + ")"
			}
			if by, ok := undoneBy[r.TxID]; ok {
				mark += "  (undone by " + by + ")"
			}
			// Marked before anyone tries: undo of it would only say so.
			if slices.Contains(lg.UndoGone, r.TxID) {
				mark += "  (no undo: gc removed its state)"
			}
			if by, ok := lg.Signers[r.Digest]; ok {
				mark += "  (signed by " + by + ")"
			} else if signedBefore(lg, i) {
				mark += "  (unsigned, after signed receipts)"
			}
			fmt.Fprintf(io.Out, "%s  %s  +%d ~%d -%d  %s  %s%s\n", r.EndedAt.Local().Format("2006-01-02 15:04:05"), r.TxID, r.Added, r.Modified, r.Deleted, r.Digest, commandLine(r.Command), mark)
		}
	}
	// A broken chain fails with --json too, so that a script that
	// checks only the exit code cannot take a tampered history as sound.
	if lg.Broken != "" {
		return fmt.Errorf("the receipt chain of %s is broken: %s", lg.Base, lg.Broken)
	}
	return nil
}

// remoteLog lists a remote branch's landings, verified from its notes; a
// broken chain fails, with --json too.
func remoteLog(ctx context.Context, io IO, st *airlock.Store, o airlock.RemoteLogOptions, asJSON bool) error {
	lg, err := st.RemoteLog(ctx, o)
	if err != nil {
		return err
	}
	if asJSON {
		if err := writeJSON(io, jsonout.NewRemoteLog(lg)); err != nil {
			return err
		}
	} else {
		for _, e := range lg.Entries {
			r := e.Receipt
			signed := "unsigned"
			if e.Signer != "" {
				signed = "signed by " + e.Signer
			}
			fmt.Fprintf(io.Out, "%s  %s  %s  +%d ~%d -%d  %s  %s\n", r.EndedAt.Local().Format("2006-01-02 15:04:05"), r.TxID, e.Commit, r.Added, r.Modified, r.Deleted, r.Digest, signed)
		}
		for _, u := range lg.Unreceipted {
			fmt.Fprintf(io.Out, "no-receipt  %s  %s\n", u.Commit, percentEscape(u.Subject, "%", true))
		}
	}
	if lg.Broken != "" {
		return fmt.Errorf("the receipt chain of %s on %s is broken: %s", lg.Branch, lg.Remote, lg.Broken)
	}
	return nil
}

// maxCommandLine bounds the command a log line shows: an agent's prompt
// can be pages long, and the receipt (--json) has it whole.
const maxCommandLine = 60

// commandLine is a receipt's command as a person reads it in a log line:
// its words quoted where a shell would need it, control characters and
// bytes that are not UTF-8 %-escaped (nothing a receipt holds can move
// the terminal), cut at maxCommandLine characters. A transaction opened
// by hand (airlock open) ran no command.
func commandLine(argv []string) string {
	if len(argv) == 0 {
		return "(airlock open)"
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = commandline.ShellQuote(percentEscape(a, "%", true))
	}
	line := strings.Join(words, " ")
	if r := []rune(line); len(r) > maxCommandLine {
		line = string(r[:maxCommandLine-1]) + "…"
	}
	return line
}

// signedBefore reports whether an entry older than lg.Entries[i] is
// signed: an unsigned receipt after signed ones is named, since the key
// that signed them did not sign it.
func signedBefore(lg *airlock.Log, i int) bool {
	for _, older := range lg.Entries[i+1:] {
		if _, ok := lg.Signers[older.Digest]; ok {
			return true
		}
	}
	return false
}

package airlock

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/stage"
)

const (
	candidateDir = "candidate"
	validateLog  = "validate.log"
)

// validators are the commands a commit validates with, in the order they
// run: the project's validate recorded at open (from the base's
// .airlock.toml, never the staged tree's), then the one the caller adds.
// A caller — the CLI, the MCP commit tool, a hook, the review page — can
// add a validator but never replace or drop the project's: for an agent
// that gate is the point, and it must not be able to lower it through
// whatever interface it reaches airlock by.
func (t *Tx) validators(o SettleOptions) []string {
	var v []string
	if t.rec.Validate != "" {
		v = append(v, t.rec.Validate)
	}
	// Running the project's command twice would prove nothing more.
	if add := strings.TrimSpace(o.Validate); add != "" && add != t.rec.Validate {
		v = append(v, add)
	}
	return v
}

// validate runs the validators of o in order in one candidate tree: a
// throw-away copy of the tree from (the base as it is now, read through
// w.base) with the prepared operations applied. Whatever they write stays
// in the candidate. The first that fails refuses; the project's runs
// first, so that no added validator touches the candidate before the
// project's has judged it. It returns the commands that ran. The base is
// re-checked afterwards by the journal's preparation, which refuses any
// path that moved meanwhile.
func (t *Tx) validate(ctx context.Context, w *workspace, from string, ops []journal.Op, o SettleOptions) (*Refusal, []string, error) {
	cmds := t.validators(o)
	if len(cmds) == 0 {
		return nil, nil, nil
	}
	dir := w.path(candidateDir)
	copier, err := stage.Get(stage.Copy)
	if err != nil {
		return nil, nil, err
	}
	if err := copier.Remove(ctx, dir); err != nil {
		return nil, nil, err
	}
	defer copier.Remove(context.WithoutCancel(ctx), dir)
	if _, err := copier.Stage(ctx, stage.Request{Base: from, Dir: dir}); err != nil {
		return nil, nil, fmt.Errorf("build the validation candidate: %w", err)
	}
	root, err := safefs.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	_, err = journal.ApplyScratch(ctx, root, t.ID(), ops, w.path(objectsDir))
	root.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("build the validation candidate: %w", err)
	}
	logPath := w.log
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("validation log: %w", err)
	}
	defer logf.Close()
	var ran []string
	for i, cmd := range cmds {
		source := "caller"
		if i == 0 && cmd == t.rec.Validate {
			source = "project"
		}
		if len(cmds) > 1 {
			// One log for all: say where each one's output begins.
			fmt.Fprintf(logf, "airlock: validating with `%s` (%s)\n", cmd, source)
		}
		t.event("validating", map[string]any{"command": cmd, "source": source})
		env := append(os.Environ(), "AIRLOCK_TX="+t.ID(), "AIRLOCK_VALIDATE=1")
		res, runErr := launch.Run(ctx, launch.Spec{
			Argv: []string{"sh", "-c", cmd}, Staged: dir, Base: t.Base(), Env: env,
			SamePath: true, Stdout: logf, Stderr: logf,
		})
		logf.Sync()
		if runErr != nil && res.ExitCode < 0 {
			return nil, ran, fmt.Errorf("run the validator `%s`: %w", cmd, runErr)
		}
		ran = append(ran, cmd)
		t.event("validated", map[string]any{"exit_code": res.ExitCode, "command": cmd})
		if res.ExitCode != 0 {
			whose := "the project's validator"
			if source == "caller" {
				whose = "the added validator"
			}
			return refuse(ValidationFailed, nil, "%s `%s` exited %d on the candidate; its output is in %s%s", whose, cmd, res.ExitCode, logPath, tail(logPath)), ran, nil
		}
	}
	return nil, ran, nil
}

// tail returns the last lines of a log, indented, for a refusal message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	var buf bytes.Buffer
	buf.WriteString("; last lines:")
	for _, l := range lines {
		io.WriteString(&buf, "\n  | "+l)
	}
	return buf.String()
}

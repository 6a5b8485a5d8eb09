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

// validateCommand is what a commit validates with: the caller's command,
// else the project config's recorded at open, unless the caller said none.
func (t *Tx) validateCommand(o SettleOptions) string {
	switch {
	case o.NoValidate:
		return ""
	case o.Validate != "":
		return o.Validate
	}
	return t.rec.Validate
}

// validate runs cmd in a candidate tree: a throw-away copy of the base as
// it is now with the prepared operations applied. Whatever cmd writes stays
// in the candidate. The base is re-checked afterwards by the journal's
// preparation, which refuses any path that moved meanwhile.
func (t *Tx) validate(ctx context.Context, ops []journal.Op, cmd string) (*Refusal, error) {
	dir := t.scratchPath(candidateDir)
	copier, err := stage.Get(stage.Copy)
	if err != nil {
		return nil, err
	}
	if err := copier.Remove(ctx, dir); err != nil {
		return nil, err
	}
	defer copier.Remove(context.WithoutCancel(ctx), dir)
	if _, err := copier.Stage(ctx, stage.Request{Base: t.baseRead(), Dir: dir}); err != nil {
		return nil, fmt.Errorf("build the validation candidate: %w", err)
	}
	root, err := safefs.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	_, err = journal.ApplyScratch(ctx, root, t.ID(), ops, t.objectsPath())
	root.Close()
	if err != nil {
		return nil, fmt.Errorf("build the validation candidate: %w", err)
	}
	logPath := t.validateLogPath()
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("validation log: %w", err)
	}
	defer logf.Close()
	t.event("validating", map[string]any{"command": cmd})
	env := append(os.Environ(), "AIRLOCK_TX="+t.ID(), "AIRLOCK_VALIDATE=1")
	res, runErr := launch.Run(ctx, launch.Spec{
		Argv: []string{"sh", "-c", cmd}, Staged: dir, Base: t.Base(), Env: env,
		SamePath: true, Stdout: logf, Stderr: logf,
	})
	logf.Sync()
	if runErr != nil && res.ExitCode < 0 {
		return nil, fmt.Errorf("run the validator: %w", runErr)
	}
	t.event("validated", map[string]any{"exit_code": res.ExitCode})
	if res.ExitCode != 0 {
		return refuse(ValidationFailed, nil, "`%s` exited %d on the candidate; its output is in %s%s", cmd, res.ExitCode, logPath, tail(logPath)), nil
	}
	return nil, nil
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

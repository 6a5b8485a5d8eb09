package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/jsonout"
)

// doctorOptions are doctor's flags.
type doctorOptions struct {
	workdir string
	json    bool
}

func newDoctorCmd(io IO) *cobra.Command {
	var o doctorOptions
	c := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Show what this machine supports: namespaces, overlay (with and without root), reflink, recycling, timestamp granularity, git",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDoctor(io, o)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print {state_dir, checks: [{name, supported, reason}]} as JSON")
	c.Flags().StringVar(&o.workdir, "workdir", "", "the base to choose the auto backend for (default: the current directory)")
	return c
}

func runDoctor(io IO, o doctorOptions) error {
	st, err := store()
	if err != nil {
		return err
	}
	checks := st.Doctor(o.workdir)
	if o.json {
		return writeJSON(io, jsonout.Doctor{Checks: checks, StateDir: st.Dir()})
	}
	w := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	for _, ch := range checks {
		verdict := "unsupported"
		if ch.Supported {
			verdict = "supported"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", ch.Name, verdict, ch.Reason)
	}
	return w.Flush()
}

package cli

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

// The environment variables that bound each git call against a remote
// (land --remote, log --remote, receipt verify --remote). They are a
// host's business, its network's and its supervisor's, not the project's:
// .airlock.toml travels with the branch, and a branch must not decide how
// long every host waits.
const (
	envRemoteTimeout       = "AIRLOCK_REMOTE_TIMEOUT"
	envRemoteConnect       = "AIRLOCK_REMOTE_CONNECT_TIMEOUT"
	envRemoteLowSpeedLimit = "AIRLOCK_REMOTE_LOW_SPEED_LIMIT"
	envRemoteLowSpeedTime  = "AIRLOCK_REMOTE_LOW_SPEED_TIME"
)

// remoteLimitFlags is the --remote-timeout flag a command with --remote
// has.
type remoteLimitFlags struct {
	timeout time.Duration
	c       *cobra.Command
}

func (f *remoteLimitFlags) register(c *cobra.Command) {
	f.c = c
	c.Flags().DurationVar(&f.timeout, "remote-timeout", airlock.DefaultRemoteLimits.Timeout,
		"with --remote: end each git call against the remote (fetch, push, ls-remote) after `DURATION`, its processes with it (else $"+envRemoteTimeout+")")
}

// limits are the bounds the environment and --remote-timeout give; with
// remote "", --remote-timeout is an error (it belongs to --remote).
func (f *remoteLimitFlags) limits(remote string) (airlock.RemoteLimits, error) {
	var m airlock.RemoteLimits
	set := f.c.Flags().Changed("remote-timeout")
	if set && remote == "" {
		return m, fmt.Errorf("--remote-timeout belongs to --remote REMOTE --branch BRANCH")
	}
	for _, d := range []struct {
		env string
		to  *time.Duration
	}{{envRemoteTimeout, &m.Timeout}, {envRemoteConnect, &m.Connect}, {envRemoteLowSpeedTime, &m.LowSpeedTime}} {
		v := os.Getenv(d.env)
		if v == "" {
			continue
		}
		x, err := time.ParseDuration(v)
		if err != nil || x <= 0 {
			return m, fmt.Errorf("%s=%q: give a positive duration such as 30s or 5m", d.env, v)
		}
		*d.to = x
	}
	if v := os.Getenv(envRemoteLowSpeedLimit); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return m, fmt.Errorf("%s=%q: give a positive number of bytes a second", envRemoteLowSpeedLimit, v)
		}
		m.LowSpeedLimit = n
	}
	if set {
		if f.timeout <= 0 {
			return m, fmt.Errorf("--remote-timeout %s: give a positive duration such as 30s or 5m", f.timeout)
		}
		m.Timeout = f.timeout
	}
	return m, nil
}

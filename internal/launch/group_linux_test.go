package launch_test

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/launch"
)

// TestEndGroup: with EndGroup, what a command leaves running in its
// process group ends with it, even a child that ignores SIGTERM; and the
// command leads that group whether or not there is a terminal.
func TestEndGroup(t *testing.T) {
	for _, sp := range modes(t) {
		if sp.contain {
			// The pids it reports are its namespace's, and the
			// namespace ends every process anyway (TestContainEnds...).
			continue
		}
		t.Run(modeName(sp), func(t *testing.T) {
			base, staged := roots(t)
			inR, inW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer inR.Close()
			defer inW.Close()
			defer outR.Close()
			// The shell reports its child and its group, then waits for a
			// line on stdin: the test holds a pidfd of the child before
			// the shell exits.
			child := make(chan [2]int, 1)
			go func() {
				sc := bufio.NewScanner(outR)
				if sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) == 3 {
						pid, _ := strconv.Atoi(f[0])
						pgid, _ := strconv.Atoi(f[1])
						shell, _ := strconv.Atoi(f[2])
						if pgid == shell {
							child <- [2]int{pid, pgid}
							return
						}
					}
					t.Errorf("the shell said %q, want its child, the child's group and its own pid (the group's leader)", sc.Text())
				}
				close(child)
			}()
			pidfd := make(chan int, 1)
			go func() {
				fd := -1
				if c, ok := <-child; ok {
					var err error
					if fd, err = unix.PidfdOpen(c[0], 0); err != nil {
						t.Errorf("pidfd of the child %d: %v", c[0], err)
					}
				}
				pidfd <- fd
				inW.WriteString("go\n")
			}()
			res, err := launch.Run(t.Context(), launch.Spec{
				Argv:   []string{"sh", "-c", `(trap '' TERM; exec sleep 1000) & echo "$! $(cut -d' ' -f5 /proc/$$/stat) $$"; read x`},
				Staged: staged, Base: base, SamePath: sp.samePath, Env: env(), EndGroup: true,
				Stdin: inR, Stdout: outW,
			})
			outW.Close()
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			fd := <-pidfd
			if fd < 0 {
				t.FailNow()
			}
			defer unix.Close(fd)
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				n, err := unix.Poll(fds, 10_000)
				if errors.Is(err, unix.EINTR) {
					continue
				}
				if err != nil || n != 1 {
					t.Errorf("the shell's child is still running after Run returned (poll %d, %v)", n, err)
					unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
				}
				break
			}
		})
	}
}

// TestInterruptedReported: a SIGTERM that reached this process while the
// command ran is reported, even when the command's trap made it exit 0.
func TestInterruptedReported(t *testing.T) {
	base, staged := roots(t)
	argv := []string{"sh", "-c", `trap "exit 0" TERM; echo ready; while :; do sleep 0.05; done`}
	w, ready, _, _ := readyPipe(t)
	go func() {
		select {
		case <-ready:
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
		case <-time.After(10 * time.Second):
		}
	}()
	res, err := launch.Run(t.Context(), launch.Spec{Argv: argv, Staged: staged, Base: base, Env: env(), Stdout: w})
	if err != nil || res.ExitCode != 0 || res.Interrupted != syscall.SIGTERM {
		t.Errorf("Run = %+v, %v; want exit 0 and Interrupted SIGTERM", res, err)
	}
	res, err = launch.Run(t.Context(), launch.Spec{Argv: []string{"true"}, Staged: staged, Base: base, Env: env()})
	if err != nil || res.Interrupted != 0 {
		t.Errorf("Run = %+v, %v; want no interruption", res, err)
	}
}

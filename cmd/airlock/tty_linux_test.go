package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// onTerminal runs cmd with its stdout and stderr on a fresh
// pseudo-terminal, as a person's shell would, stdin from /dev/null, and
// returns every byte the terminal received (after the line discipline:
// "\n" arrives as "\r\n") and how cmd ended. cmd.Stdout and cmd.Stderr
// must be unset.
func onTerminal(cmd *exec.Cmd) (raw string, err error) {
	m, s, err := openPTY()
	if err != nil {
		return "", err
	}
	defer m.Close()
	cmd.Stdout, cmd.Stderr = s, s
	err = cmd.Start()
	// The child holds the slave now: the master reads EIO once every
	// holder has closed it, which is how the reader below knows the end.
	s.Close()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	_, rerr := io.Copy(&out, m)
	err = cmd.Wait()
	var pe *os.PathError
	if rerr != nil && !(errors.As(rerr, &pe) && errors.Is(pe.Err, syscall.EIO)) {
		return out.String(), fmt.Errorf("read the terminal: %w", rerr)
	}
	return out.String(), err
}

// screen is what a person sees of raw once the terminal has drawn it: a
// carriage return goes back to the line's start, ESC [ K erases to its
// end, a newline starts the next line, and other bytes overwrite what was
// under them. A line drawn and erased leaves nothing. Any other escape
// sequence is an error: the glance uses none.
func screen(raw string) (string, error) {
	lines := []string{""}
	col := 0
	for i := 0; i < len(raw); i++ {
		cur := &lines[len(lines)-1]
		switch c := raw[i]; {
		case c == '\r':
			col = 0
		case c == '\n':
			lines = append(lines, "")
			col = 0
		case c == 0x1b:
			if !strings.HasPrefix(raw[i:], "\x1b[K") {
				return "", fmt.Errorf("an escape sequence other than ESC [ K at byte %d: %q", i, raw[i:min(len(raw), i+8)])
			}
			*cur = (*cur)[:col]
			i += 2
		default:
			if col < len(*cur) {
				*cur = (*cur)[:col] + string(c) + (*cur)[col+1:]
			} else {
				*cur += string(c)
			}
			col++
		}
	}
	var b strings.Builder
	for i, l := range lines {
		if i == len(lines)-1 && l == "" {
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// openPTY opens a fresh pseudo-terminal: its master, and its slave to
// hand a child. Neither becomes airlock's test's controlling terminal.
func openPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("no pseudo-terminals here: %w", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlock a pseudo-terminal: %w", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("name a pseudo-terminal: %w", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("open a pseudo-terminal's slave: %w", err)
	}
	return m, s, nil
}

package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// InterruptedError is the cause of a commit that SIGINT or SIGTERM
// stopped while it validated (the *CancelledError it returns wraps it):
// Claude Code ends a SessionEnd hook with SIGTERM after 1.5 s, a person
// presses Ctrl-C. A validator cut short reached no verdict, so none is
// recorded; the validator ended with everything it started, and the
// transaction is kept exactly as it was before the commit.
type InterruptedError struct {
	Signal syscall.Signal
}

func (e *InterruptedError) Error() string {
	return "interrupted by " + unix.SignalName(e.Signal) + " while validating"
}

// interrupts catches SIGINT and SIGTERM for the life of a validation, as
// the launcher catches them for the life of a command: a signal stops the
// validation (ctx is cancelled with an *InterruptedError) instead of
// killing airlock while the candidate is built, or between validators,
// with no word said and the candidate left behind.
type interrupts struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	ch     chan os.Signal
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

func catchInterrupts(parent context.Context) *interrupts {
	ctx, cancel := context.WithCancelCause(parent)
	i := &interrupts{ctx: ctx, cancel: cancel, ch: make(chan os.Signal, 2), done: make(chan struct{})}
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		// A signal airlock was started with ignored (a background job of a
		// non-interactive shell ignores SIGINT) stays ignored, for it and
		// for the validators, as the launcher leaves it.
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	signal.Notify(i.ch, sigs...)
	i.wg.Add(1)
	go func() {
		defer i.wg.Done()
		select {
		case s := <-i.ch:
			i.interrupt(s.(syscall.Signal))
			// A second one has its default effect again (outside a
			// running validator, which the launcher forwards it to):
			// a person who presses Ctrl-C twice means it.
			signal.Stop(i.ch)
		case <-i.done:
		}
	}()
	return i
}

// interrupt stops the validation for s (the first signal wins).
func (i *interrupts) interrupt(s syscall.Signal) {
	i.cancel(&InterruptedError{Signal: s})
}

// stop lets the signals go back to their default and reports the first
// caught, 0 when none. Once signal.Stop returns, every signal whose
// delivery began before it has reached i.ch.
func (i *interrupts) stop() syscall.Signal {
	i.once.Do(func() {
		signal.Stop(i.ch)
		close(i.done)
		i.wg.Wait()
		select {
		case s := <-i.ch:
			i.interrupt(s.(syscall.Signal))
		default:
		}
	})
	if irq, ok := context.Cause(i.ctx).(*InterruptedError); ok {
		return irq.Signal
	}
	return 0
}

// interruptedBy is the signal that interrupted the commit err reports, 0
// when none did.
func interruptedBy(err error) syscall.Signal {
	var irq *InterruptedError
	if errors.As(err, &irq) {
		return irq.Signal
	}
	return 0
}

// interruptedMessage is CancelledError's message for an interrupted
// validation.
func interruptedMessage(id string, irq *InterruptedError) string {
	return fmt.Sprintf("the commit of %s was %v: the validator was stopped with everything it started and reached no verdict, nothing was written to the base, and transaction %s is kept as it was; commit it again (%s) to validate and apply it", id, irq, id, Step{Kind: StepCommit, Tx: id})
}

package progress

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Meter receives tasks and says what the command is doing.
// Implementations must be safe for concurrent use.
type Meter interface {
	begin(t *Task)
	end(t *Task)
	status(s string)
}

type key struct{}

// With returns a context that carries m; Start reports to it.
func With(ctx context.Context, m Meter) context.Context {
	return context.WithValue(ctx, key{}, m)
}

// Task is one measured step. A nil *Task is valid and does nothing, so
// callers need not check whether a meter is installed.
type Task struct {
	Name       string
	TotalFiles int
	TotalBytes int64
	started    time.Time
	files      atomic.Int64
	bytes      atomic.Int64
	m          Meter
}

// Start begins a task on the context's meter; without one it returns nil.
func Start(ctx context.Context, name string, totalFiles int, totalBytes int64) *Task {
	m, _ := ctx.Value(key{}).(Meter)
	if m == nil {
		return nil
	}
	t := &Task{Name: name, TotalFiles: totalFiles, TotalBytes: totalBytes, started: time.Now(), m: m}
	m.begin(t)
	return t
}

// Status says what the command is doing now ("staging ."), on the
// context's meter, until the next Status, or Status(ctx, "") to erase it
// before writing a line of one's own. A terminal draws it on its progress
// line, so that it overwrites itself and is not left behind; without a
// meter it says nothing.
func Status(ctx context.Context, s string) {
	if m, _ := ctx.Value(key{}).(Meter); m != nil {
		m.status(s)
	}
}

// Add counts files and bytes done.
func (t *Task) Add(files int, bytes int64) {
	if t == nil {
		return
	}
	t.files.Add(int64(files))
	t.bytes.Add(bytes)
}

// Done ends the task. Calling it twice is harmless.
func (t *Task) Done() {
	if t == nil || t.m == nil {
		return
	}
	t.m.end(t)
}

// Snapshot is a task's counts at one moment.
func (t *Task) Snapshot() (files int, bytes int64, elapsed time.Duration) {
	return int(t.files.Load()), t.bytes.Load(), time.Since(t.started)
}

// Terminal draws the running task on one line of w, redrawn in place,
// once it has run for Delay; it erases the line when the task ends. The
// status, when there is one, holds that line while no task draws it.
type Terminal struct {
	W     io.Writer
	Delay time.Duration // default one second
	Every time.Duration // redraw interval; default 200 ms

	off    atomic.Bool
	mu     sync.Mutex
	cur    *Task
	now    string // the status
	drawn  bool   // the line holds something: a task or the status
	shown  bool   // the line holds the status, as it is now
	stop   chan struct{}
	closed chan struct{}
}

// Disable stops the meter from drawing anything (--quiet).
func (p *Terminal) Disable() { p.off.Store(true) }

func (p *Terminal) begin(t *Task) {
	if p.off.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The task draws once it has run for Delay; until then the line says
	// the status, not what an earlier task had done.
	p.redrawLocked()
	p.cur = t
	if p.stop == nil {
		p.stop, p.closed = make(chan struct{}), make(chan struct{})
		go p.loop(p.stop, p.closed)
	}
}

func (p *Terminal) end(t *Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != t {
		return
	}
	p.cur = nil
	p.redrawLocked()
}

func (p *Terminal) status(s string) {
	if p.off.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s != p.now {
		p.now, p.shown = s, false
	}
	if p.cur != nil && p.drawn && !p.shown {
		// The task's line holds the terminal; the status comes back when
		// the task ends.
		return
	}
	p.redrawLocked()
}

// redrawLocked puts the status on the line in place of what was there, or
// erases the line when there is none.
func (p *Terminal) redrawLocked() {
	switch {
	case p.now == "":
		p.clearLocked()
	case !p.shown:
		fmt.Fprintf(p.W, "\r\x1b[Kairlock: %s", p.now)
		p.drawn, p.shown = true, true
	}
}

// Close stops redrawing and erases the line, status and all. Calling it
// twice is harmless.
func (p *Terminal) Close() {
	p.mu.Lock()
	stop, closed := p.stop, p.closed
	p.stop = nil
	p.clearLocked()
	p.cur = nil
	p.now = ""
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-closed
	}
}

func (p *Terminal) loop(stop, closed chan struct{}) {
	defer close(closed)
	every := p.Every
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			p.draw()
		}
	}
}

func (p *Terminal) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.cur
	if t == nil {
		return
	}
	delay := p.Delay
	if delay <= 0 {
		delay = time.Second
	}
	files, bytes, elapsed := t.Snapshot()
	if elapsed < delay {
		return
	}
	fmt.Fprintf(p.W, "\r\x1b[Kairlock: %s", Line(t.Name, files, t.TotalFiles, bytes, t.TotalBytes, elapsed))
	p.drawn, p.shown = true, false
}

func (p *Terminal) clearLocked() {
	if p.drawn {
		fmt.Fprint(p.W, "\r\x1b[K")
		p.drawn, p.shown = false, false
	}
}

// Line formats a task's progress: "staging 1,234/5,678 files, 12/340 MB, 2s".
func Line(name string, files, totalFiles int, bytes, totalBytes int64, elapsed time.Duration) string {
	s := fmt.Sprintf("%s %s/%s files", name, count(int64(files)), count(int64(totalFiles)))
	if totalBytes > 0 {
		s += fmt.Sprintf(", %s/%s", size(bytes), size(totalBytes))
	}
	return s + fmt.Sprintf(", %ds", int(elapsed.Seconds()))
}

func count(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func size(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

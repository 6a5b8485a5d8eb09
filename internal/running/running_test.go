package running

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain lets the test binary stand in for an airlock process that
// registers a command and then dies without releasing it.
func TestMain(m *testing.M) {
	if dir := os.Getenv("RUNNING_TEST_REGISTER"); dir != "" {
		if _, err := New(dir).Start("crash"); err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("registered\n")
		select {} // until killed
	}
	os.Exit(m.Run())
}

func TestQuietOnlyAfterEveryCommandEnded(t *testing.T) {
	r := New(filepath.Join(t.TempDir(), "running"))
	a, err := r.Start("a")
	if err != nil {
		t.Fatal(err)
	}
	mark, err := r.Mark()
	if err != nil {
		t.Fatal(err)
	}
	if r.QuietSince(mark) {
		t.Fatal("quiet while a command runs")
	}
	b, err := r.Start("b")
	if err != nil {
		t.Fatal(err)
	}
	a.Done()
	if r.QuietSince(mark) {
		t.Fatal("quiet while another command still runs")
	}
	b.Done() // the last one: records the quiet moment
	c, err := r.Start("c")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Done()
	if !r.QuietSince(mark) {
		t.Fatal("not quiet since the mark, though a moment came with nothing running")
	}
	now, _ := r.Mark()
	if r.QuietSince(now) {
		t.Fatal("quiet since a mark taken while c runs")
	}
}

// TestCrashReleasesTheEntry: an airlock killed while its command runs
// leaves its entry with no lock held: the first look removes it (and does
// not count as quiet), the next finds the registry quiet.
func TestCrashReleasesTheEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "running")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RUNNING_TEST_REGISTER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "registered\n" {
		t.Fatalf("the child did not register: %q", line)
	}
	r := New(dir)
	mark, err := r.Mark()
	if err != nil {
		t.Fatal(err)
	}
	if r.QuietSince(mark) {
		t.Fatal("quiet while the child's command runs")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if r.QuietSince(mark) {
		t.Fatal("the look that found the crashed entry counted as quiet")
	}
	if !r.QuietSince(mark) {
		t.Fatal("the crashed airlock's entry still counts as running")
	}
}

func TestUncontainedIsNeverQuietThisBoot(t *testing.T) {
	r := New(filepath.Join(t.TempDir(), "running"))
	e, err := r.Start("u")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Uncontained(); err != nil {
		t.Fatal(err)
	}
	e.Done()
	if r.QuietSince(0) {
		t.Fatal("quiet after an uncontained command, in the same boot")
	}
	// A mark of an earlier boot is void.
	if boot, err := bootID(); err == nil && boot != "" {
		ents, _ := os.ReadDir(r.dir)
		for _, ent := range ents {
			if len(ent.Name()) > len(uncontainedPrefix) && ent.Name()[:len(uncontainedPrefix)] == uncontainedPrefix {
				os.WriteFile(filepath.Join(r.dir, ent.Name()), []byte("another-boot\n"), 0o600)
			}
		}
		if !r.QuietSince(0) {
			t.Fatal("an uncontained mark of an earlier boot still counts")
		}
	}
}

// TestFailsClosed: what airlock does not write, or cannot read, is never
// quiet.
func TestFailsClosed(t *testing.T) {
	r := New(filepath.Join(t.TempDir(), "running"))
	e, err := r.Start("x")
	if err != nil {
		t.Fatal(err)
	}
	e.Done()
	mark, err := r.Mark()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "stranger"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r.QuietSince(mark) {
		t.Fatal("quiet with a file airlock does not write in the registry")
	}
	os.Remove(filepath.Join(r.dir, "stranger"))
	os.WriteFile(filepath.Join(r.dir, quietFile), []byte("garbage\n"), 0o600)
	if _, err := r.Mark(); err == nil {
		t.Fatal("Mark read a generation from garbage")
	}
	a, _ := r.Start("a")
	defer a.Done()
	if r.QuietSince(0) {
		t.Fatal("quiet since a mark, with a command running and a generation that cannot be read")
	}
}

// TestRunningNamesItsTransaction: Running finds a command registered for
// its transaction while it runs, not another transaction's, and not once
// it is done or its airlock died (its entry's lock free).
func TestRunningNamesItsTransaction(t *testing.T) {
	r := New(filepath.Join(t.TempDir(), "running"))
	if on, err := r.Running("t1"); err != nil || on {
		t.Fatalf("an empty registry: %v %v", on, err)
	}
	e, err := r.Start("t1")
	if err != nil {
		t.Fatal(err)
	}
	if on, err := r.Running("t1"); err != nil || !on {
		t.Errorf("t1 while its command runs: %v %v", on, err)
	}
	if on, err := r.Running("t2"); err != nil || on {
		t.Errorf("t2 while t1's command runs: %v %v", on, err)
	}
	e.Done()
	if on, err := r.Running("t1"); err != nil || on {
		t.Errorf("t1 once its command is done: %v %v", on, err)
	}
	// An entry whose lock nobody holds: an airlock that died.
	if err := os.WriteFile(filepath.Join(r.Dir(), "cmd-dead"), []byte("t1 pid 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if on, err := r.Running("t1"); err != nil || on {
		t.Errorf("t1 with a dead airlock's entry: %v %v", on, err)
	}
}

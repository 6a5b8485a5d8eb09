package airlock_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/airlockdev/airlock"
)

// exampleDirs makes a base with one file and a state root beside it, and
// returns them with a function that removes both.
func exampleDirs() (base, stateDir string, cleanup func()) {
	top, err := os.MkdirTemp("", "airlock-example-")
	if err != nil {
		log.Fatal(err)
	}
	base, stateDir = filepath.Join(top, "project"), filepath.Join(top, "state")
	if err := os.Mkdir(base, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "README"), []byte("hello\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	return base, stateDir, func() { os.RemoveAll(top) }
}

// Open a transaction over a directory, write in its staged workspace, and
// commit: the change reaches the directory all at once, or not at all.
func Example() {
	base, stateDir, cleanup := exampleDirs()
	defer cleanup()
	ctx := context.Background()

	st, err := airlock.OpenStore(stateDir)
	if err != nil {
		log.Fatal(err)
	}
	tx, err := st.Open(ctx, airlock.OpenOptions{Base: base})
	if err != nil {
		log.Fatal(err)
	}
	// The work happens in tx.Path(), never in base.
	if err := os.WriteFile(filepath.Join(tx.Path(), "NOTES"), []byte("new\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	res, err := tx.Commit(ctx, airlock.CommitOptions{})
	if err != nil {
		log.Fatal(err) // a *airlock.Refusal says why nothing was applied
	}
	notes, _ := os.ReadFile(filepath.Join(base, "NOTES"))
	fmt.Println(res.Outcome, res.Added, res.Modified, res.Deleted)
	fmt.Print(string(notes))
	// Output:
	// committed 1 0 0
	// new
}

// Run a command in a fresh transaction: it commits when the command
// exits 0 and is discarded otherwise, as `airlock run` does.
func ExampleStore_Run() {
	base, stateDir, cleanup := exampleDirs()
	defer cleanup()
	ctx := context.Background()

	st, err := airlock.OpenStore(stateDir)
	if err != nil {
		log.Fatal(err)
	}
	res, err := st.Run(ctx, airlock.OpenOptions{Base: base}, airlock.RunOptions{
		Argv: []string{"sh", "-c", "echo edited > README"},
	})
	if err != nil {
		log.Fatal(err)
	}
	readme, _ := os.ReadFile(filepath.Join(base, "README"))
	fmt.Println(res.ExitCode, res.Settled.Outcome, res.Settled.Modified)
	fmt.Print(string(readme))
	// Output:
	// 0 committed 1
	// edited
}

// Land transactions one after another: each is committed against the
// base as the ones before it left it.
func ExampleStore_Land() {
	base, stateDir, cleanup := exampleDirs()
	defer cleanup()
	ctx := context.Background()

	st, err := airlock.OpenStore(stateDir)
	if err != nil {
		log.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"a.txt", "b.txt"} {
		tx, err := st.Open(ctx, airlock.OpenOptions{Base: base})
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tx.Path(), name), []byte(name+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		ids = append(ids, tx.ID())
	}
	for _, l := range st.Land(ctx, ids, airlock.CommitOptions{}) {
		if l.Err != nil {
			log.Fatal(l.Err)
		}
		fmt.Println(l.Result.Outcome, l.Result.Added)
	}
	// Output:
	// committed 1
	// committed 1
}

// Recover a base before working in it: a commit that was killed part-way
// is rolled back from its journal, exactly.
func ExampleStore_Recover() {
	base, stateDir, cleanup := exampleDirs()
	defer cleanup()
	ctx := context.Background()

	st, err := airlock.OpenStore(stateDir)
	if err != nil {
		log.Fatal(err)
	}
	res, err := st.Recover(ctx, base)
	if err != nil {
		log.Fatal(err)
	}
	if res.TxID == "" {
		fmt.Println("nothing to recover")
	} else {
		fmt.Println("rolled back", res.TxID, res.Digest)
	}
	// Output:
	// nothing to recover
}

package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestRemoveTxWhileAnotherDeleterRuns: a committed transaction's large
// staged tree is renamed to staged.trash inside the transaction and
// deleted by a detached `rm -rf`; gc removing the transaction meanwhile
// walks the same files. Entries vanish under the walk at any point, and
// the removal must still succeed ("readdirent ... no such file or
// directory" made `airlock gc A B C D E` fail).
func TestRemoveTxWhileAnotherDeleterRuns(t *testing.T) {
	rm, err := exec.LookPath("rm")
	if err != nil {
		t.Skip("no rm(1) to race with")
	}
	s := openStore(t)
	for round := 0; round < 3; round++ {
		id := fmt.Sprintf("race%02d", round)
		tx, err := s.Create(id)
		if err != nil {
			t.Fatal(err)
		}
		trash := tx.Path("staged.trash")
		const dirs = 200
		for d := 0; d < dirs; d++ {
			dir := filepath.Join(trash, fmt.Sprintf("d%03d", d))
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 20; i++ {
				if err := os.WriteFile(filepath.Join(dir, "sub", fmt.Sprintf("f%02d", i)), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The deleter is well under way, holding its own descriptors, when
		// the removal starts: as after a commit that retired its tree.
		cmd := exec.Command(rm, "-rf", "--", trash)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for {
			ents, err := os.ReadDir(trash)
			if err != nil || len(ents) < dirs-10 {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		err = s.RemoveTx(id)
		cmd.Wait() // its own errors are its own: the tree moved under it
		if err != nil {
			t.Fatalf("round %d: RemoveTx with another deleter running: %v", round, err)
		}
		if _, err := os.Lstat(tx.Dir()); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("round %d: %s still there: %v", round, tx.Dir(), err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(s.Dir(), "trash")); len(ents) != 0 {
		t.Errorf("trash holds %d leftovers", len(ents))
	}
}

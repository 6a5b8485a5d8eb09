package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/testbin"
)

// A staged workspace still bind-mounted over something real must stop the
// removal: deleting through the mount would delete the real tree.
func TestRemoveRefusesMountPoint(t *testing.T) {
	s := openStore(t)
	tx, err := s.Create("m")
	if err != nil {
		t.Fatal(err)
	}
	real := t.TempDir()
	precious := filepath.Join(real, "precious")
	os.WriteFile(precious, []byte("p"), 0o600)
	mnt := tx.Path("staged")
	os.Mkdir(mnt, 0o700)
	if err := unix.Mount(real, mnt, "", unix.MS_BIND, ""); err != nil {
		if errors.Is(err, unix.EPERM) {
			testbin.Missing(t, "cannot bind mount here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })

	err = tx.Remove("staged")
	if err == nil || !strings.Contains(err.Error(), "mount point") {
		t.Fatalf("Remove = %v, want a mount point refusal", err)
	}
	err = s.RemoveTx("m")
	if err == nil || !strings.Contains(err.Error(), "mount point") {
		t.Fatalf("RemoveTx = %v, want a mount point refusal", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Fatalf("removal went through the mount: %v", err)
	}
	if _, err := s.Tx("m"); err != nil {
		t.Fatalf("refused RemoveTx should leave the tx in place: %v", err)
	}
}

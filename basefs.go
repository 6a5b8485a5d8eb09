package airlock

import (
	"strings"

	"github.com/airlockdev/airlock/internal/safefs"
)

// openBase opens the base for a settle, through path: the base's own path,
// or the one through which this process sees the real base from inside a
// same-path view (see ownerView). Every read and write of the settle goes
// through the returned root, never through the path again, so the root
// must be the very directory the transaction opened: the base's own path
// is opened without following a symlink on the way (someone who can rename
// entries beside the base could otherwise swap it for a symlink to another
// directory between two steps), and the opened directory's device and
// inode must be those recorded at open. Anything else refuses BaseDrift.
func (t *Tx) openBase(path string) (*safefs.Root, *Refusal, error) {
	open := safefs.OpenRootNoFollow
	if path != t.Base() && strings.HasPrefix(path, "/proc/") {
		// The owner's view is reached through /proc's links by design;
		// the identity check below still holds it to the base.
		open = safefs.OpenRoot
	}
	root, err := open(path)
	if err != nil {
		return nil, refuse(BaseDrift, []string{"."}, "the base %s cannot be opened any more without following a symlink (%v)", t.Base(), err), nil
	}
	info, err := root.Lstat("")
	if err != nil {
		root.Close()
		return nil, nil, err
	}
	if info.Dev != t.rec.BaseDevice || info.Ino != t.rec.BaseInode {
		root.Close()
		return nil, refuse(BaseDrift, []string{"."}, "%s is no longer the directory the transaction opened (device and inode differ)", t.Base()), nil
	}
	return root, nil, nil
}

package airlock

import (
	"strings"

	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// openBase opens the base for a settle, through path: the base's own path,
// or the one through which this process sees the real base from inside a
// same-path view (see ownerView). Every read and write of the settle goes
// through the returned root, never through the path again, so the root
// must be the very directory the transaction opened: the base's own path
// is opened without following a symlink on the way (someone who can rename
// entries beside the base could otherwise swap it for a symlink to another
// directory between two steps), and the opened directory's identity (its
// file system's and its inode, see state.Identity) must be the one
// recorded at open. Anything else refuses BaseDrift.
func (t *Tx) openBase(path string) (*safefs.Root, *Refusal, error) {
	return t.openBaseConfirmed(path, false)
}

// openBaseConfirmed is openBase for recover, where confirmed (--moved)
// says that the directory is the transaction's base even when its
// identity cannot tell (see driftIdentity).
func (t *Tx) openBaseConfirmed(path string, confirmed bool) (*safefs.Root, *Refusal, error) {
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
	dir, err := root.Open("")
	if err != nil {
		root.Close()
		return nil, nil, err
	}
	now, err := state.IdentifyFile(dir)
	dir.Close()
	if err != nil {
		root.Close()
		return nil, nil, err
	}
	if r := t.driftIdentity(now, confirmed); r != nil {
		root.Close()
		return nil, r, nil
	}
	return root, nil, nil
}

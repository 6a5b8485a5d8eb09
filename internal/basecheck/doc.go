// Package basecheck holds the checks of a frozen change set against the
// base it is about to land in, made under the base's lock before anything
// is journaled: which paths drifted since open (by stat, and by bytes
// where stat cannot prove a file unchanged), which paths would leave the
// base or be reached through a symlink, and which staged files share an
// inode with their base file.
//
// It reads the base only through a safefs.Root, never by path, and
// decides nothing: the caller (airlock's preflight) turns what it finds
// into a refusal or a three-way merge.
package basecheck

// Package manifest measures a directory tree into entries: one per regular
// file, directory and symlink, with the stat facts that tell whether it
// changed (kind, mode, size, mtime, ctime, inode, device, symlink target) and
// a sha256 content digest that is computed only when stat cannot decide.
//
// Paths are slash-separated and relative to the walked root. They are Go
// strings holding the raw bytes of the names, so names that are not UTF-8,
// or that hold newlines, round-trip; the JSON form keeps them exact.
package manifest

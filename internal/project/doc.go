// Package project finds the project a base belongs to and the config that
// governs it, and matches paths against selectors written relative to the
// project root.
//
// A transaction may be opened over a subdirectory of a project; the
// project's rules still hold there. Find goes up from the base to the
// nearest .airlock.toml, stopping at the enclosing git repository's top
// level, and never reaches the user's home or /; it refuses a config above
// the base that another user owns. A Selector matches base-relative paths
// as the project's selectors mean them, including the directories between
// the project root and the base and protected paths reached through a
// symlink (LinkAliases).
package project

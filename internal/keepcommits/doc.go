// Package keepcommits keeps the commits an agent made in a staged copy of
// a repository: a copy, reflink or overlay transaction over a git work
// tree stages a copy of its .git too, and nothing under .git is ever
// applied, so those commits would go with the staged tree.
//
// Fetch brings the commits the staged repository has and the base's does
// not into the base's repository as one branch (airlock/<id>). Only
// objects and that one ref are written: the base's HEAD, index, working
// tree and other refs are not touched. The staged repository is the
// agent's: it is only read, by git's own upload-pack, and Unsafe says when
// it holds something git would follow out of it or block on, so that it
// is not read at all.
package keepcommits

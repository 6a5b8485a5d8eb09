// Package progress carries a progress meter through a context, so that
// long steps deep in the library (staging a tree, freezing a change set)
// can report files and bytes done without every caller in between passing
// a callback, and reports nothing at all when no meter was installed.
//
// The CLI installs a [Terminal] meter only when stderr is a terminal; it
// draws one line, redrawn in place: a task that has run longer than a
// second, else the command's [Status] (staging, committing). The line is
// erased before the command writes one of its own, so it is never left
// behind, and scripts never see it.
package progress

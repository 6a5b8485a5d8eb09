// Package progress carries a progress meter through a context, so that
// long steps deep in the library (staging a tree, freezing a change set)
// can report files and bytes done without every caller in between passing
// a callback, and reports nothing at all when no meter was installed.
//
// The CLI installs a [Terminal] meter only when stderr is a terminal; it
// draws one line, and only for a task that has run longer than a second,
// so quick operations and scripts never see it.
package progress

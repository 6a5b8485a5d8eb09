// Package browsertest holds one test: the review page of the real airlock
// binary, driven in a real headless Chromium (TestReviewInChromium). It has
// no code of its own.
//
// It is a module of its own (go.mod here, requiring airlock through
// `replace github.com/airlockdev/airlock => ../../..`) so that the browser
// driver it needs, chromedp and its protocol bindings, stays out of
// airlock's go.mod: a dependency only a test needs lives in a module of its
// own. Its import path is inside airlock's tree, so it may use
// internal/testbin. airlock's `go test ./...` does not reach it; run it
// here (`cd internal/review/browsertest && go test ./...`) or through
// .ci/run, which does. Under CI=true a missing Chromium fails the test,
// naming it; elsewhere the test skips.
package browsertest

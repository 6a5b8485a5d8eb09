// Package review serves a page on which a person reviews one transaction
// in a browser: its change set as a unified or side-by-side diff, its
// refusal if any, and Commit, Approve (commit with protected paths
// approved) and Discard buttons, a commit button only when the commit's
// own checks (airlock.Tx.CheckReview) say that commit would land.
//
// It guarantees that the page is served on 127.0.0.1 only, at a random
// port, under a random token that is part of every URL; that a request
// without the token, for another Host, or a POST whose Origin is not the
// page's own, gets 403 and changes nothing; and that the page is rendered
// on the server with html/template (no script runs in it, and its Content
// Security Policy allows none). A settle (commit or discard) ends the
// review; a refusal does not, so the person can approve or discard next.
//
// The tests here drive the real binary's page over HTTP; the one that
// drives it in a real headless Chromium is in browsertest, a module of its
// own so that its browser driver stays out of airlock's go.mod
// (docs/dependencies.md).
package review

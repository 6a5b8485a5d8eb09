// Package landing is the git side of landing a transaction into a branch
// of a git remote, and of verifying what was landed there.
//
// A Repo is a private bare repository whose objects fall back on the
// base's repository: it fetches the branch and its receipt notes
// (refs/notes/airlock), reads trees, writes the candidate's blobs, adds a
// receipt as the landed commit's note and pushes the commit and the note
// in one atomic push leased on the heads it fetched, so that a push that
// finds either moved changes nothing. WalkChain verifies a branch's chain
// of receipts from the branch and its notes alone.
//
// Every git call against the remote (fetch, push, ls-remote) is bounded
// (Bounds: ssh's connect and keepalives, http's low-speed limit, a
// deadline) and tethered (git.Repo.Tethered): a silent remote cannot hang
// it, nor outlive the process. A push git calls failed is judged by what
// the remote holds after it (PushAtomic), never by git's exit alone.
//
// It knows git, receipts and the Airlock-Tx trailer, not transactions:
// what lands and whether it may is airlock's (Tx.LandRemote). Every
// message it returns has the remote's secrets masked (Redact).
package landing

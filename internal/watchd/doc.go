// Package watchd keeps, between runs, the watches that let a warm run skip
// the two stat walks of its refresh: a small daemon per state root that
// answers "what changed since then?" for a base, and "what touched this
// pooled tree since it settled?", as git's fsmonitor answers for a
// working tree. Correctness never depends on it: every answer it cannot
// give exactly is "unknown", and the caller walks as it did without it.
//
// # What it holds
//
//   - A base watch: an inotify watch on every directory of a base, set
//     when an open first asks for a token (Client.Token) and kept while
//     pooled trees of that base need it. A token is an instance of the
//     daemon and a point in its sequence of events; Client.Since names
//     every path of the base that an event touched after that point, every
//     file open at that moment (a write through a shared mapping makes no
//     event, but moves the file's mtime when it dirties a page), and every
//     file with a second name (a write through the other name
//     names no path here). Those paths measured again over the manifest
//     measured after the token (manifest.Patch) are the base as a walk
//     would find it.
//   - A held tree: the inotify instance that watched a run's staged tree
//     from before open measured it to the settle (internal/watch), handed
//     to the daemon over its socket when the settled tree is pooled, so
//     that no moment between the claim and the next refresh goes
//     unwatched. Client.Take names every
//     path of the tree an event touched since the watch began; measured
//     again over the settling walk, they prove the tree untouched or show
//     what touched it, as the walk of the whole tree did.
//
// # When it says "unknown"
//
// Another daemon instance than the one that gave the token (it exited or
// was killed: its watches died with it); an overflow of the kernel's event
// queue; a change of the mount table (a file system mounted over part of
// a watched tree shows what no watch covers); a watch that could not be
// set (fs.inotify.max_user_watches); a held tree whose key was handed over
// twice; an answer that does not come. Each means a walk.
//
// # Who can talk to it
//
// The socket lives in the state root's watchd directory (0700), which a
// run's command cannot reach (launch.Spec.Hidden), and the daemon answers
// only processes of its own user (SO_PEERCRED). A process of the user
// that airlock did not start can stop it or take its socket, as it can
// write the base or the state root themselves (docs/reliability.md).
//
// # Its life
//
// The first airlock that needs it starts it (Client.Token), detached, as
// this same binary (Main must be called first in main). It exits when it
// holds nothing (a base watch lapses once no pooled tree refers to it and
// no token was given for a while, and a held tree goes when it is taken or
// deleted), or when nobody asked it anything for an hour. AIRLOCK_NO_WATCH=1 keeps airlock from starting or asking it.
package watchd

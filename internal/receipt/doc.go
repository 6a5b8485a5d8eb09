// Package receipt writes and verifies the receipt of a settled transaction:
// a JSON record of what the transaction was, what it did to the base, and
// how it ended, sealed by a digest so that any later edit to it is
// detected.
//
// # File format
//
// A receipt is one JSON object, schema "airlock.receipt/v1", with exactly
// these members, all present: schema, tx, base, base_device, base_inode,
// backend, command, started_at, ended_at, exit_code, outcome, refusal,
// refused_paths, added, modified, deleted, excluded_selectors,
// protected_selectors, approved, base_digest, result_digest, diff_digest,
// not_transactional, previous, digest. Paths and arguments (base, command,
// refused_paths) are JSON strings when they are valid UTF-8 and
// {"base64": "..."} objects otherwise. Times are RFC 3339 with nanoseconds,
// in UTC, as Go's time.RFC3339Nano writes them. exit_code is null when no
// command ran. previous is the digest of the receipt committed to the same
// base before this one ("" for the first), which makes a base's receipts a
// chain.
//
// Optional members: base_fs names the base's file system as
// internal/state's Identity does (fsid-<type>-<f_fsid>, uuid-<type>-<uuid>
// or dev-<device>, all lowercase hex), the part of the base's identity
// that survives a reboot; branch and branch_head (both or neither) name the git
// branch a worktree transaction kept its own commits on; validators lists
// the validate commands the settle ran on the candidate tree, in order
// (the project's, then the one the caller added), as raw bytes like
// command, and is left out when none ran; landed_branch and
// landed_commit (both or neither, outcome committed) name the branch of a
// git remote a transaction was landed into (refs/heads/...) and the
// commit the landing made there, whose note in refs/notes/airlock is the
// receipt; validated, only in such a receipt whose validators ran, says
// how they ran: "alone" on the landed commit's own tree, or "batch" once
// on batch_tree (present exactly then), the tree of the last commit of
// the batch the commit landed in; signature is an armored SSH signature
// (see Signature).
//
// # Digest
//
// The digest is part of the contract; anyone can recompute it:
//
//	digest = "sha256:" + lowercase hex(sha256(canonical JSON of the receipt
//	         object with its "digest" and "signature" members removed))
//
// Canonical JSON is computed from the parsed document, not from any Go
// type, so a member that a reader does not know still counts:
//
//   - objects: members sorted by key, comparing the keys' UTF-8 bytes;
//   - no whitespace between tokens;
//   - numbers: exactly the digits of the file (1, 1.0 and 1e0 differ);
//   - strings: UTF-8 as is, except '"' and '\' escaped with a backslash,
//     \b \t \n \f \r for those controls, \u00xx (lowercase hex) for the
//     other bytes below 0x20; nothing else is escaped ('<', '>', '&', '/'
//     and U+2028 stay literal);
//   - true, false and null as themselves.
//
// Two receipts that differ only in whitespace, member order, or how a
// string's characters are escaped have the same digest; any other change
// moves it. The digest is not a signature: it shows that a receipt was not
// edited after sealing, not who sealed it.
//
// # Signature
//
// A signed receipt's "signature" member is an armored SSH signature
// (PROTOCOL.sshsig, as `ssh-keygen -Y sign` writes it and git uses for
// gpg.format=ssh) in the namespace airlock-receipt, over exactly the bytes
// the digest hashes (SignedBytes): signing does not move the digest, so
// chains link the same receipts signed or not, and removing a signature
// leaves an unsigned receipt, which verifiers report as unsigned. This
// package checks the member's form; internal/sshsig checks the signature.
//
// # Verification
//
// Verify accepts only what Seal can write: valid UTF-8; one object and
// nothing after it but whitespace; nesting no deeper than a receipt needs;
// no member twice at any depth (a duplicated key lets two readers see two
// different receipts under one digest); no member that schema v1 does not
// define; every member of the right JSON type and in the one form Seal
// writes it (integers without sign, fraction or exponent, times in UTC,
// base64 only for bytes that are not UTF-8); and values that agree with
// each other (a refusal kind exactly when the outcome is refused, refused
// paths only then, zero counts when the outcome is no_changes). It checks
// the schema first, since it says how to read the rest, then the digest,
// then the members, and every error says which member is wrong and how.
// Seal runs Verify on what it wrote, so a receipt that Seal returns always
// verifies.
package receipt

// Package sshsig signs bytes and checks signatures in git's own SSH
// signature format (SSHSIG, armored), by running ssh-keygen exactly as git
// does for gpg.format=ssh: `ssh-keygen -Y sign` with user.signingkey (a
// private key file, a public key file whose key ssh-agent holds, or a
// key:: literal, which must then be in the agent), and `ssh-keygen -Y
// find-principals` then `-Y verify` against an allowed signers file
// (gpg.ssh.allowedSignersFile). gpg.ssh.program names the program, as for
// git.
//
// Signatures are made under Namespace, not git's "git": a receipt's
// signature must never pass for a commit's or a tag's, and the reverse.
package sshsig

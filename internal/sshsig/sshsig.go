package sshsig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
)

// Namespace is the SSHSIG namespace receipts are signed under: an
// allowed signers line that restricts its key with namespaces="..." must
// name it.
const Namespace = "airlock-receipt"

// Armor is how every armored SSH signature begins.
const Armor = "-----BEGIN SSH SIGNATURE-----"

// defaultProgram is git's default for gpg.ssh.program.
const defaultProgram = "ssh-keygen"

// Config is what git's configuration says about SSH signing: the key to
// sign with, the program, and the files to check against.
type Config struct {
	// Key is user.signingkey when gpg.format is ssh: a key file's path
	// (~ expanded) or a "key::" literal; "" when nothing signs.
	Key string
	// Program is gpg.ssh.program, else ssh-keygen.
	Program string
	// AllowedSigners is gpg.ssh.allowedSignersFile (~ expanded), "" when
	// unset.
	AllowedSigners string
	// Revocations is gpg.ssh.revocationFile (~ expanded), "" when unset.
	Revocations string
	// Source names where the key came from, for messages.
	Source string
}

// ConfigOf reads the signing configuration as git itself would in dir
// (the repository's config, the user's, the system's; outside a
// repository the last two). Only gpg.format=ssh signs: git's openpgp and
// x509 formats are not SSH signatures.
func ConfigOf(ctx context.Context, dir string) (Config, error) {
	// One git for every key (a receipt is sealed per settle): the values
	// as paths, which expands a leading ~ as git's interpolate_path and
	// leaves every other value as it is (the format, a key:: literal).
	out, err := git.In(existing(dir)).Run(ctx, "config", "-z", "--type=path", "--get-regexp",
		`^(gpg\.format|gpg\.ssh\.program|gpg\.ssh\.allowedsignersfile|gpg\.ssh\.revocationfile|user\.signingkey)$`)
	var ge *git.Error
	var ee *exec.ExitError
	if errors.As(err, &ge) && errors.As(err, &ee) && ee.ExitCode() == 1 && ge.Stderr == "" {
		out, err = nil, nil // none set
	}
	if err != nil {
		return Config{}, fmt.Errorf("read the SSH signing configuration from the git config of %s: %w", dir, err)
	}
	// Each entry is "key\nvalue"; a key set twice takes its last value,
	// as git does for a single-valued key.
	vals := map[string]string{}
	for _, e := range strings.Split(string(out), "\x00") {
		if k, v, ok := strings.Cut(e, "\n"); ok {
			vals[k] = v
		}
	}
	c := Config{Program: vals["gpg.ssh.program"], AllowedSigners: vals["gpg.ssh.allowedsignersfile"], Revocations: vals["gpg.ssh.revocationfile"]}
	if c.Program == "" {
		c.Program = defaultProgram
	}
	if vals["gpg.format"] == "ssh" && vals["user.signingkey"] != "" {
		c.Key = vals["user.signingkey"]
		c.Source = "user.signingkey in the git config of " + dir
	}
	return c, nil
}

// existing is dir, or where it is gone (a base deleted or moved away
// since its transaction opened: its discard is still sealed), its nearest
// ancestor that is a directory: the configuration git would read there.
func existing(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		if d == filepath.Dir(d) {
			return d
		}
	}
}

// isLiteral is git's is_literal_ssh_key: "key::" and then the public
// key, or (deprecated) a public key given as is.
func isLiteral(key string) bool {
	return strings.HasPrefix(key, "key::") || strings.HasPrefix(key, "ssh-")
}

// Sign signs data with the configured key and returns the armored
// signature. With no key configured it returns "" and no error.
func (c Config) Sign(ctx context.Context, data []byte) (string, error) {
	if c.Key == "" {
		return "", nil
	}
	keyFile := c.Key
	what := "key " + c.Key
	if isLiteral(c.Key) {
		// ssh-keygen takes a key only as a file; a literal is the public
		// half, and the agent holds the private one (git writes it to a
		// temporary file too).
		lit := strings.TrimPrefix(c.Key, "key::")
		f, err := os.CreateTemp("", "airlock-signing-key-")
		if err != nil {
			return "", fmt.Errorf("write the signing key literal to a file: %w", err)
		}
		defer os.Remove(f.Name())
		_, werr := f.WriteString(lit + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", fmt.Errorf("write the signing key literal to %s: %w", f.Name(), werr)
		}
		keyFile = f.Name()
		what = "the key:: literal " + short(lit)
	}
	args := []string{"-Y", "sign", "-n", Namespace, "-f", keyFile}
	if isLiteral(c.Key) {
		args = append(args, "-U") // the private key is in the agent, as git asks
	}
	out, stderr, err := c.run(ctx, data, args...)
	if err != nil {
		return "", fmt.Errorf("sign with %s (%s) by %s: %s; fix the key, load it into ssh-agent, or unset user.signingkey (or gpg.format=ssh) to write unsigned receipts", what, c.Source, c.Program, said(err, stderr))
	}
	sig := string(out)
	if !strings.HasPrefix(sig, Armor) {
		return "", fmt.Errorf("sign with %s by %s: it wrote no armored SSH signature (%q)", what, c.Program, short(sig))
	}
	return sig, nil
}

// Signer is who made a signature that checks: the principal the allowed
// signers file names for its key, and the key's fingerprint.
type Signer struct {
	Principal   string
	Fingerprint string
}

func (s Signer) String() string {
	if s.Principal == "" {
		return "key " + s.Fingerprint
	}
	return s.Principal + " (key " + s.Fingerprint + ")"
}

// BadSignatureError: a signature that does not verify over its data, or
// whose key the allowed signers file does not list (for this namespace).
type BadSignatureError struct {
	Signer Signer // what is known of who signed: the key at least, when the signature itself is sound
	Reason string
}

func (e *BadSignatureError) Error() string {
	if e.Signer.Fingerprint == "" {
		return e.Reason
	}
	return "signed by " + e.Signer.String() + ": " + e.Reason
}

// NoAllowedSignersError: there is a signature but nothing to check whose
// it is against.
type NoAllowedSignersError struct{ Signer Signer }

func (e *NoAllowedSignersError) Error() string {
	return fmt.Sprintf("signed by %s, but no allowed signers file says whose key that is: give --allowed-signers FILE or set gpg.ssh.allowedSignersFile", e.Signer)
}

// Verify checks sig over data: the signature must be sound and its key
// listed for a principal in the allowed signers file (c.AllowedSigners),
// under Namespace, as git checks a commit's. A signature that does not
// check is a *BadSignatureError, one with no allowed signers file to
// check it against a *NoAllowedSignersError.
func (c Config) Verify(ctx context.Context, data []byte, sig string) (Signer, error) {
	dir, err := os.MkdirTemp("", "airlock-sshsig-")
	if err != nil {
		return Signer{}, fmt.Errorf("check a signature: %w", err)
	}
	defer os.RemoveAll(dir)
	sigFile := filepath.Join(dir, "receipt.sig")
	if err := os.WriteFile(sigFile, []byte(sig), 0o600); err != nil {
		return Signer{}, fmt.Errorf("check a signature: %w", err)
	}
	// The common case in two ssh-keygen runs: the principals the allowed
	// signers list for the signature's key, then verify as one of them.
	var reasons []string
	if c.AllowedSigners != "" {
		if _, err := os.Stat(c.AllowedSigners); err != nil {
			return Signer{}, fmt.Errorf("read the allowed signers file: %w", err)
		}
		out, stderr, err := c.run(ctx, nil, "-Y", "find-principals", "-f", c.AllowedSigners, "-s", sigFile)
		if err != nil && !isExit(err) {
			return Signer{}, fmt.Errorf("look the signer up in %s with %s: %s", c.AllowedSigners, c.Program, said(err, stderr))
		}
		for _, p := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if err != nil || p == "" {
				break
			}
			args := []string{"-Y", "verify", "-f", c.AllowedSigners, "-I", p, "-n", Namespace, "-s", sigFile}
			if c.Revocations != "" {
				args = append(args, "-r", c.Revocations)
			}
			good, stderr, verr := c.run(ctx, data, args...)
			if verr == nil {
				return Signer{Principal: p, Fingerprint: fingerprint(string(good))}, nil
			}
			if !isExit(verr) {
				return Signer{}, fmt.Errorf("check the signature with %s: %s", c.Program, said(verr, stderr))
			}
			reasons = append(reasons, p+": "+said(verr, stderr))
		}
	}
	// No allowed signer's: say whose key it is, and whether the signature
	// is sound at all (one that is not names no one).
	out, stderr, err := c.run(ctx, data, "-Y", "check-novalidate", "-n", Namespace, "-s", sigFile)
	if err != nil {
		if isExit(err) {
			return Signer{}, &BadSignatureError{Reason: "the signature does not verify over the receipt (" + said(err, stderr) + ")"}
		}
		return Signer{}, fmt.Errorf("check a signature with %s: %s", c.Program, said(err, stderr))
	}
	who := Signer{Fingerprint: fingerprint(string(out))}
	switch {
	case c.AllowedSigners == "":
		return who, &NoAllowedSignersError{Signer: who}
	case len(reasons) == 0:
		return who, &BadSignatureError{Signer: who, Reason: "that key is not listed in " + c.AllowedSigners}
	}
	return who, &BadSignatureError{Signer: who, Reason: fmt.Sprintf("%s does not accept it for namespace %s (%s)", c.AllowedSigners, Namespace, strings.Join(reasons, "; "))}
}

func (c Config) run(ctx context.Context, stdin []byte, args ...string) ([]byte, string, error) {
	prog := c.Program
	if prog == "" {
		prog = defaultProgram
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	noTerminal(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.String(), err
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

func said(err error, stderr string) string {
	if s := strings.TrimSpace(stderr); s != "" {
		return strings.ReplaceAll(s, "\n", "; ")
	}
	return err.Error()
}

// fingerprint picks the key's fingerprint out of ssh-keygen's
// "Good "ns" signature with ED25519 key SHA256:...".
func fingerprint(out string) string {
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "SHA256:") {
			return f
		}
	}
	return strings.TrimSpace(out)
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

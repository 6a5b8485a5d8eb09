package airlock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/sshsig"
)

// receiptSigner is how the receipts of a transaction over the base are
// signed: with the key git signs commits with there (gpg.format=ssh and
// user.signingkey, in the base's repository or the user's config), or nil
// when none is configured. dir is where the base is now, "" for the path
// it opened at.
func (t *Tx) receiptSigner(ctx context.Context, dir string) (receipt.SignFunc, error) {
	if dir == "" {
		dir = t.Base()
	}
	cfg, err := sshsig.ConfigOf(ctx, dir)
	if err != nil {
		return nil, err
	}
	if cfg.Key == "" {
		return nil, nil
	}
	return func(b []byte) (string, error) { return cfg.Sign(ctx, b) }, nil
}

// sealReceipt seals rc, signed when a key is configured for the base (at
// dir, as receiptSigner has it); a configured key that cannot sign fails
// the seal.
func (t *Tx) sealReceipt(ctx context.Context, rc *receipt.Receipt, dir string) ([]byte, error) {
	sign, err := t.receiptSigner(ctx, dir)
	if err != nil {
		return nil, err
	}
	return rc.SealSigned(sign)
}

// signingProbe are the bytes a commit signs before it applies anything,
// to learn that the configured key signs (the receipt is signed only once
// the apply is done, and must not fail then).
var signingProbe = []byte("airlock: can this key sign the receipt?\n")

// canSign fails when a signing key is configured for the base and does not
// sign, before a commit touches the base.
func (t *Tx) canSign(ctx context.Context) error {
	sign, err := t.receiptSigner(ctx, "")
	if err != nil || sign == nil {
		return err
	}
	if _, err := sign(signingProbe); err != nil {
		return fmt.Errorf("%w; nothing was applied to %s and transaction %s is kept", err, t.Base(), t.ID())
	}
	return nil
}

// SignatureCheck is what checking a receipt's signature found.
type SignatureCheck struct {
	// Signed is false for a receipt that carries no signature.
	Signed bool
	// Signer names who signed: the allowed signers' principal and the
	// key's fingerprint (only the key when the check failed before the
	// principal was known).
	Signer string
	// Err says why a signature does not check: it does not verify, its
	// key is not an allowed signer, or there is no allowed signers file.
	Err error
}

// CheckSignature checks the signature of the receipt file data against
// the allowed signers file: allowedSigners when not "", else
// gpg.ssh.allowedSignersFile as git reads it in dir. data must verify as
// a receipt.
func CheckSignature(ctx context.Context, data []byte, dir, allowedSigners string) (SignatureCheck, error) {
	rc, err := receipt.Verify(data)
	if err != nil {
		return SignatureCheck{}, err
	}
	if rc.Signature == "" {
		return SignatureCheck{}, nil
	}
	cfg, err := signatureConfig(ctx, dir, allowedSigners)
	if err != nil {
		return SignatureCheck{}, err
	}
	return checkSignature(ctx, cfg, data, rc)
}

// signatureConfig is the checking configuration in dir, its allowed
// signers file overridden by allowedSigners when not "".
func signatureConfig(ctx context.Context, dir, allowedSigners string) (sshsig.Config, error) {
	cfg, err := sshsig.ConfigOf(ctx, dir)
	if err != nil {
		return cfg, err
	}
	if allowedSigners != "" {
		cfg.AllowedSigners = allowedSigners
	}
	return cfg, nil
}

func checkSignature(ctx context.Context, cfg sshsig.Config, data []byte, rc *receipt.Receipt) (SignatureCheck, error) {
	signed, err := receipt.SignedBytes(data)
	if err != nil {
		return SignatureCheck{}, err
	}
	who, err := cfg.Verify(ctx, signed, rc.Signature)
	out := SignatureCheck{Signed: true, Signer: who.String()}
	var bad *sshsig.BadSignatureError
	var none *sshsig.NoAllowedSignersError
	if errors.As(err, &bad) || errors.As(err, &none) {
		out.Err = err
		return out, nil
	}
	return out, err
}

// signedReceipt is a receipt whose signature is to be checked, with its
// file's bytes (what was signed is computed from them).
type signedReceipt struct {
	data []byte
	rc   *receipt.Receipt
}

// checkSignatures checks the signatures of rs, in rs's order; an unsigned
// receipt's check is the zero SignatureCheck. The ssh-keygen runs (two per
// signature, some tens of milliseconds) are most of a long chain's check,
// so they run a few at a time.
func checkSignatures(ctx context.Context, cfg sshsig.Config, rs []signedReceipt) ([]SignatureCheck, error) {
	out := make([]SignatureCheck, len(rs))
	errs := make([]error, len(rs))
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, r := range rs {
		if r.rc.Signature == "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = checkSignature(ctx, cfg, r.data, r.rc)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

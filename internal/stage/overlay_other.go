//go:build !linux

package stage

import (
	"context"
	"errors"

	"github.com/airlockdev/airlock/internal/changeset"
)

// overlayBackend is Linux overlayfs; elsewhere it reports why not.
type overlayBackend struct{}

const overlayUnsupported = "overlayfs is Linux-only; use --backend copy or reflink"

func (overlayBackend) Name() string { return Overlay }

func (overlayBackend) Supported(string) (bool, string) { return false, overlayUnsupported }

func (overlayBackend) Stage(context.Context, Request) (*Result, error) {
	return nil, errors.New(overlayUnsupported)
}

func (overlayBackend) Remove(ctx context.Context, dir string) error { return removeTree(ctx, dir) }

func (overlayBackend) Changes(context.Context, DiffRequest) (*changeset.Set, error) {
	return nil, errors.New(overlayUnsupported)
}

// ProbeOverlay reports that overlayfs is Linux-only.
func ProbeOverlay(string) (bool, string) { return false, overlayUnsupported }

// SupportedHosted reports that overlayfs is Linux-only.
func (overlayBackend) SupportedHosted(string) (bool, string) { return false, overlayUnsupported }

// HostedMount: there is no hosted overlay off Linux.
func HostedMount(string, string) (string, string, bool) { return "", "", false }

// ProbeHosted reports that overlayfs is Linux-only.
func ProbeHosted(string, func(string, string, string, []string) error) (bool, string) {
	return false, overlayUnsupported
}

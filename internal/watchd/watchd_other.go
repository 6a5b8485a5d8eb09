//go:build !linux

package watchd

import (
	"errors"
	"path/filepath"
)

// Dir is the daemon's directory in a state root.
const Dir = "watchd"

// ErrUnknown is wrapped by every answer here: no daemon runs off Linux,
// and the caller walks.
var ErrUnknown = errors.New("the watch cannot say what changed")

// Changes is what a watch names since a point.
type Changes struct {
	Paths []string `json:"paths"`
	Trees []string `json:"trees"`
}

// Main does nothing off Linux.
func Main() {}

// Available is false off Linux.
func Available() bool { return false }

// Client asks nothing off Linux.
type Client struct{ dir string }

// New is the client of the daemon of the state root stateDir.
func New(stateDir string) *Client { return &Client{dir: filepath.Join(stateDir, Dir)} }

// Dir is the daemon's directory.
func (c *Client) Dir() string { return c.dir }

// Running is false off Linux.
func (c *Client) Running() bool { return false }

func (c *Client) Token(base string) (string, error) { return "", ErrUnknown }

func (c *Client) Since(base, token string) (*Changes, string, error) { return nil, "", ErrUnknown }

func (c *Client) Hold(key, base, root string, fd int, dirs map[int32]string) error {
	return ErrUnknown
}

func (c *Client) Take(key string, back bool) (*Changes, *Kept, error) {
	return nil, nil, ErrUnknown
}

// Kept: see the Linux build.
type Kept struct {
	FD   int
	Dirs map[int32]string
}

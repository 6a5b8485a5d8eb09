package airlock

import "github.com/airlockdev/airlock/internal/manifest"

// Bytes is a string of raw bytes (a path, a selector, an argument) with a
// JSON form that keeps every byte: a JSON string when it is valid UTF-8,
// else {"base64": "..."}. File names need not be UTF-8, and as a plain
// string one that is not would read back with U+FFFD in its place.
type Bytes string

func (b Bytes) MarshalJSON() ([]byte, error) { return manifest.Bytes(b).MarshalJSON() }

func (b *Bytes) UnmarshalJSON(data []byte) error {
	return (*manifest.Bytes)(b).UnmarshalJSON(data)
}

// plain is bs as strings, for what has no JSON form of its own.
func plain(bs []Bytes) []string {
	if bs == nil {
		return nil
	}
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

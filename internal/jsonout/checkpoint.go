package jsonout

import (
	"time"

	"github.com/airlockdev/airlock"
)

// Checkpoint is one checkpoint: `checkpoint ID --json`, and each of
// `checkpoints ID --json`'s.
type Checkpoint struct {
	Tx       string    `json:"tx"`
	Number   int       `json:"number"`
	Time     time.Time `json:"time"`
	Message  string    `json:"message,omitempty"`
	Auto     string    `json:"auto,omitempty"` // "hook" or "rewind"; absent when asked for
	Added    int       `json:"added"`
	Modified int       `json:"modified"`
	Deleted  int       `json:"deleted"`
	Digest   string    `json:"digest"`
}

// FromRewind is rewind r of transaction tx as the JSON prints it.
func FromRewind(tx string, r *airlock.Rewound) Rewound {
	return Rewound{Tx: tx, To: FromCheckpoint(tx, r.To), Saved: FromCheckpoint(tx, r.Saved), Paths: r.Paths}
}

// FromCheckpoint is c of transaction tx as the JSON prints it.
func FromCheckpoint(tx string, c airlock.Checkpoint) Checkpoint {
	return Checkpoint{Tx: tx, Number: c.Number, Time: c.Time, Message: c.Message, Auto: string(c.Auto),
		Added: c.Added, Modified: c.Modified, Deleted: c.Deleted, Digest: c.Digest}
}

// Checkpoints is `checkpoints ID --json`.
type Checkpoints struct {
	Tx          string       `json:"tx"`
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// Rewound is `rewind ID N --json`.
type Rewound struct {
	Tx    string     `json:"tx"`
	To    Checkpoint `json:"to"`
	Saved Checkpoint `json:"saved"`
	Paths int        `json:"paths"`
}

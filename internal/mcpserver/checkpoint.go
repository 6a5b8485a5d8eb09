package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// addCheckpointTools adds checkpoint and rewind: a model records the
// staged tree before a risky step and puts it back after one that went
// wrong, whatever wrote it (its run commands included).
func addCheckpointTools(s *mcp.Server, h *handlers) {
	no, yes := false, true
	mcp.AddTool(s, &mcp.Tool{
		Name:        "checkpoint",
		Description: "Record the transaction's staged tree as it is now, before a risky step: returns the checkpoint's number (1, 2, 3...) and its counts against the base. rewind puts the tree back to it. Refused while a run in the transaction is in flight.",
		Annotations: &mcp.ToolAnnotations{Title: "Checkpoint the staged tree", DestructiveHint: &no, OpenWorldHint: &no},
	}, worded(h.checkpoint))
	mcp.AddTool(s, &mcp.Tool{
		Name:        "rewind",
		Description: "Put the transaction's staged tree back exactly as it was at checkpoint number: files, modes, symlinks, deletions, whatever wrote them since (run commands included); the base is not touched. It first records the tree as it is as a new checkpoint (saved): rewinding to that one undoes the rewind. Refused while a run in the transaction is in flight.",
		Annotations: &mcp.ToolAnnotations{Title: "Rewind the staged tree to a checkpoint", DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no},
	}, worded(h.rewind))
}

// CheckpointInput is the checkpoint tool's input.
type CheckpointInput struct {
	ID      string `json:"id" jsonschema:"the transaction id"`
	Message string `json:"message,omitempty" jsonschema:"a note to know the checkpoint by"`
}

// RewindInput is the rewind tool's input.
type RewindInput struct {
	ID     string `json:"id" jsonschema:"the transaction id"`
	Number int    `json:"number" jsonschema:"the checkpoint to go back to"`
}

func (h *handlers) checkpoint(ctx context.Context, _ *mcp.CallToolRequest, in CheckpointInput) (*mcp.CallToolResult, jsonout.Checkpoint, error) {
	tx, err := h.store.Tx(in.ID)
	if err != nil {
		return nil, jsonout.Checkpoint{}, err
	}
	cp, err := tx.Checkpoint(ctx, airlock.CheckpointOptions{Message: in.Message})
	if err != nil {
		return nil, jsonout.Checkpoint{}, err
	}
	return nil, jsonout.FromCheckpoint(tx.ID(), *cp), nil
}

// rewind runs to its end even when the client cancels: a rewind stopped
// halfway would leave the tree neither the checkpoint nor what it was.
func (h *handlers) rewind(ctx context.Context, _ *mcp.CallToolRequest, in RewindInput) (*mcp.CallToolResult, jsonout.Rewound, error) {
	tx, err := h.store.Tx(in.ID)
	if err != nil {
		return nil, jsonout.Rewound{}, err
	}
	r, err := tx.Rewind(context.WithoutCancel(ctx), in.Number)
	if err != nil {
		return nil, jsonout.Rewound{}, err
	}
	return nil, jsonout.FromRewind(tx.ID(), r), nil
}

package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Snapshot is a tree's content kept by the control plane (API.md,
// Snapshots). NewBytes is what this snapshot added to the store; Session
// (with its Backend) and Kind say which session took it and why ("manual", "periodic",
// "carry").
type Snapshot struct {
	ID        string         `json:"id"`
	CreatedAt time.Time      `json:"createdAt"`
	Source    SnapshotSource `json:"source"`
	Files     int            `json:"files"`
	Bytes     int64          `json:"bytes"`
	NewBytes  int64          `json:"newBytes"`
	Session   string         `json:"session,omitempty"`
	Backend   string         `json:"backend,omitempty"`
	Kind      string         `json:"kind,omitempty"`
}

// SnapshotSource is where a snapshot was taken: an agent and a directory
// under its root.
type SnapshotSource struct {
	Agent string `json:"agent"`
	Path  string `json:"path"`
}

// CreateSnapshotRequest is the body of POST {target}/snapshots.
type CreateSnapshotRequest struct {
	Path      string   `json:"path,omitempty"`
	Exclude   []string `json:"exclude,omitempty"`
	Gitignore bool     `json:"gitignore,omitempty"`
}

// RestoreSnapshotRequest is the body of POST {target}/snapshots/{id}/restore.
type RestoreSnapshotRequest struct {
	Path   string `json:"path,omitempty"`
	Delete bool   `json:"delete,omitempty"`
}

// RestoreResult is what a restore did: the snapshot's Files and Bytes, and
// the bytes that crossed the network to the target.
type RestoreResult struct {
	Files            int   `json:"files"`
	Bytes            int64 `json:"bytes"`
	TransferredBytes int64 `json:"transferredBytes"`
}

// SnapshotList is the body of GET /v1/workspaces/{ws}/snapshots.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// CreateSnapshot calls POST {target}/snapshots: only content the store
// lacks crosses the network.
func (t *Target) CreateSnapshot(ctx context.Context, req CreateSnapshotRequest) (*Snapshot, error) {
	var out Snapshot
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/snapshots", req, &out)
}

// RestoreSnapshot calls POST {target}/snapshots/{id}/restore: only content
// the target lacks crosses the network.
func (t *Target) RestoreSnapshot(ctx context.Context, id string, req RestoreSnapshotRequest) (*RestoreResult, error) {
	var out RestoreResult
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/snapshots/"+url.PathEscape(id)+"/restore", req, &out)
}

// ListSnapshots calls GET /v1/workspaces/{ws}/snapshots, oldest first.
func (c *Client) ListSnapshots(ctx context.Context, ws string) ([]Snapshot, error) {
	var out SnapshotList
	if err := c.do(ctx, http.MethodGet, c.wsPath(ws)+"/snapshots", nil, &out); err != nil {
		return nil, err
	}
	return out.Snapshots, nil
}

// DeleteSnapshot calls DELETE /v1/workspaces/{ws}/snapshots/{id}: chunks
// no other snapshot uses are freed.
func (c *Client) DeleteSnapshot(ctx context.Context, ws, id string) error {
	return c.do(ctx, http.MethodDelete, c.wsPath(ws)+"/snapshots/"+url.PathEscape(id), nil, nil)
}

package client

import (
	"context"
	"net/http"
	"net/url"
)

// Workspace keys and enrollment tokens: create, list (never with their
// secrets) and delete by id.

func (c *Client) keysPath(ws string) string { return c.wsPath(ws) + "/keys" }

func (c *Client) tokensPath(ws string) string {
	return c.wsPath(ws) + "/enrollment-tokens"
}

// CreateKeyWithID calls POST /v1/workspaces/{ws}/keys (admin) and returns the
// new workspace key: its id and its token, shown only this once.
func (c *Client) CreateKeyWithID(ctx context.Context, ws string) (*Key, error) {
	var out Key
	return &out, c.do(ctx, http.MethodPost, c.keysPath(ws), CreateKeyRequest{}, &out)
}

// ListKeys calls GET /v1/workspaces/{ws}/keys (admin).
func (c *Client) ListKeys(ctx context.Context, ws string) ([]KeyInfo, error) {
	var out KeyList
	if err := c.do(ctx, http.MethodGet, c.keysPath(ws), nil, &out); err != nil {
		return nil, err
	}
	return out.Keys, nil
}

// DeleteKey calls DELETE /v1/workspaces/{ws}/keys/{id} (admin): the key
// stops working at once.
func (c *Client) DeleteKey(ctx context.Context, ws, id string) error {
	return c.do(ctx, http.MethodDelete, c.keysPath(ws)+"/"+url.PathEscape(id), nil, nil)
}

// ListEnrollmentTokens calls GET /v1/workspaces/{ws}/enrollment-tokens: the
// tokens that can still enroll.
func (c *Client) ListEnrollmentTokens(ctx context.Context, ws string) ([]EnrollmentTokenInfo, error) {
	var out EnrollmentTokenList
	if err := c.do(ctx, http.MethodGet, c.tokensPath(ws), nil, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// DeleteEnrollmentToken calls DELETE
// /v1/workspaces/{ws}/enrollment-tokens/{id}: the token no longer enrolls.
func (c *Client) DeleteEnrollmentToken(ctx context.Context, ws, id string) error {
	return c.do(ctx, http.MethodDelete, c.tokensPath(ws)+"/"+url.PathEscape(id), nil, nil)
}

// DeviceApproval calls GET /v1/workspaces/{ws}/device-approvals/{userCode}:
// the pending device login showing that code, to check before approving.
func (c *Client) DeviceApproval(ctx context.Context, ws, userCode string) (*DeviceApproval, error) {
	var out DeviceApproval
	return &out, c.do(ctx, http.MethodGet, c.wsPath(ws)+"/device-approvals/"+url.PathEscape(userCode), nil, &out)
}

// DecideDeviceLogin calls POST /v1/workspaces/{ws}/device-approvals: it
// approves or denies a device login.
func (c *Client) DecideDeviceLogin(ctx context.Context, ws string, req DeviceApprovalRequest) (*DeviceApproval, error) {
	var out DeviceApproval
	return &out, c.do(ctx, http.MethodPost, c.wsPath(ws)+"/device-approvals", req, &out)
}

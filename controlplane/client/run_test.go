package client_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/outposttest"
)

// realAgent is the target of a real agent, in-process with a control
// plane, serving a new directory until the test ends.
func realAgent(t *testing.T) *client.Target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	box, err := outposttest.New(t, outposttest.Config{}).RealAgent(ctx, "box", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// signalWriter reports its first write on wrote.
type signalWriter struct {
	strings.Builder
	wrote chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if w.Len() == 0 {
		defer close(w.wrote)
	}
	return w.Builder.Write(p)
}

// Run hands output over while the process still runs, and a caller that
// stops following (ctx ends) leaves no process behind.
func TestRunStreamsAndTerminatesOnCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	box := realAgent(t)

	runCtx, stop := context.WithCancel(ctx)
	out := &signalWriter{wrote: make(chan struct{})}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := client.Run(runCtx, box, "echo started; exec sleep 600", out, io.Discard)
		done <- result{code, err}
	}()
	select {
	case <-out.wrote: // the process is still sleeping: output came as it was written
	case r := <-done:
		t.Fatalf("Run returned %d, %v before any output was handed over", r.code, r.err)
	}
	stop()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || out.String() != "started\n" {
		t.Fatalf("Run after cancel = %d, %v, output %q; want context.Canceled and \"started\\n\"", r.code, r.err, out.String())
	}
	// Terminate signals the group and returns; the exit follows.
	procs, err := box.ListProcesses(ctx)
	if err != nil || len(procs) != 1 {
		t.Fatalf("processes %v, %v; want the one Run started", procs, err)
	}
	for {
		p, err := box.GetProcess(ctx, procs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Running {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("process %s still running after Run stopped following it", p.ID)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Run returns the remote exit code and keeps the streams apart.
func TestRunExitCodeAndStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	box := realAgent(t)
	tests := []struct {
		cmd            string
		code           int
		stdout, stderr string
	}{
		{"true", 0, "", ""},
		{"echo out; echo err >&2; exit 7", 7, "out\n", "err\n"},
		{"printf 'a\\000b'", 0, "a\x00b", ""},
	}
	for _, tt := range tests {
		var stdout, stderr strings.Builder
		code, err := client.Run(ctx, box, tt.cmd, &stdout, &stderr)
		if err != nil || code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
			t.Errorf("Run(%q) = %d, %v, %q, %q; want %d, %q, %q", tt.cmd, code, err, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
		}
	}
}

// NewFromEnv reads the environment; what is missing or malformed is an
// error that never shows the token.
func TestNewFromEnv(t *testing.T) {
	const secret = "opk_secret_value"
	tests := []struct {
		name, url, token, ws, ca string
		wantErr                  string
		wantBase, wantWS         string
	}{
		{"defaults", "", secret, "", "", "", client.DefaultURL, client.DefaultWorkspace},
		{"given", "https://cp.example:7443/", secret, "acme", "", "", "https://cp.example:7443", "acme"},
		{"no token", "", "", "", "", "no token", "", ""},
		{"bad url", "ftp://x", secret, "", "", "control plane URL", "", ""},
		{"missing ca file", "", secret, "", "/nonexistent/ca.pem", "ca file", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(client.EnvURL, tt.url)
			t.Setenv(client.EnvToken, tt.token)
			t.Setenv(client.EnvWorkspace, tt.ws)
			t.Setenv(client.EnvCAFile, tt.ca)
			c, err := client.NewFromEnv()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), secret) {
					t.Fatalf("err = %v, want one saying %q without the token", err, tt.wantErr)
				}
				return
			}
			if err != nil || c.BaseURL != tt.wantBase || c.Workspace != tt.wantWS || c.Token != secret {
				t.Fatalf("NewFromEnv: %v (base %q, workspace %q)", err, c.BaseURL, c.Workspace)
			}
		})
	}
}

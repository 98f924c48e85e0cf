package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/outposttest"
	"github.com/outposthq/outpost/wire"
)

// Typical use: an admin makes a workspace, a key for it and an enrollment
// token; an agent enrolled with the token is then listed and reached with
// c.Agent(ws, id).Exec. The control plane runs in-process here.
func Example() {
	dir, err := os.MkdirTemp("", "outpost-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := controlplane.New(controlplane.Config{
		Listen:     "127.0.0.1:0",
		NATSListen: "127.0.0.1:0",
		StateDir:   dir,
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	admin := client.New(srv.URL(), srv.AdminToken())
	ws, err := admin.CreateWorkspace(ctx, "demo")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("workspace:", ws.ID)

	// A workspace key can do everything inside its workspace.
	key, err := admin.CreateKey(ctx, "demo")
	if err != nil {
		log.Fatal(err)
	}
	c := client.New(srv.URL(), key)
	tok, err := c.CreateEnrollmentToken(ctx, "demo", client.EnrollmentTokenRequest{Agent: "laptop"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("token expires after creation:", tok.ExpiresAt.After(ws.CreatedAt))
	// On the machine: outpost agent enroll --url URL --token TOKEN ...

	agents, err := c.ListAgents(ctx, "demo")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("agents:", len(agents))

	// Errors are *wire.Error, matched with errors.Is.
	_, err = c.Agent("demo", "laptop").Exec(ctx, client.ExecRequest{Argv: []string{"uname", "-a"}})
	fmt.Println("exec on an agent not yet enrolled is not_found:", errors.Is(err, wire.ErrNotFound))
	_, err = c.CreateWorkspace(ctx, "other")
	fmt.Println("a workspace key cannot create workspaces:", errors.Is(err, wire.ErrPermissionDenied))

	// Output:
	// workspace: demo
	// token expires after creation: true
	// agents: 0
	// exec on an agent not yet enrolled is not_found: true
	// a workspace key cannot create workspaces: true
}

// A program configured by its environment: OUTPOST_URL (default
// http://127.0.0.1:7070), OUTPOST_TOKEN, OUTPOST_WORKSPACE (default
// "default") and OUTPOST_CA_FILE. Methods given "" for a workspace use the
// client's.
func ExampleNewFromEnv() {
	os.Setenv("OUTPOST_URL", "https://outpost.example:7443")
	os.Setenv("OUTPOST_TOKEN", "opk_example")
	os.Setenv("OUTPOST_WORKSPACE", "acme")
	defer func() {
		for _, k := range []string{"OUTPOST_URL", "OUTPOST_TOKEN", "OUTPOST_WORKSPACE"} {
			os.Unsetenv(k)
		}
	}()
	c, err := client.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.BaseURL, c.Workspace)
	_ = c.Agent("", "laptop") // the agent laptop of workspace acme
	// Output:
	// https://outpost.example:7443 acme
}

// Run streams a command's output as it comes and returns its exit code,
// as ssh does. Here the control plane and a real agent run in-process
// (outposttest); in production the client comes from NewFromEnv.
func ExampleRun() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := outposttest.Start(ctx, outposttest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()
	box, err := env.RealAgent(ctx, "box", "") // serving a new directory
	if err != nil {
		log.Fatal(err)
	}

	code, err := client.Run(ctx, box, "echo building; echo done", os.Stdout, os.Stderr)
	fmt.Println("exit", code, err)
	// Output:
	// building
	// done
	// exit 0 <nil>
}

package outposttest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/outposttest"
	"github.com/outposthq/outpost/wire"
)

// A program that calls Outpost over HTTP tests itself against a real
// control plane and a mock agent: the test says what exec and reading a
// file answer; the program uses the SDK as in production.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := outposttest.Start(ctx, outposttest.Config{Agent: "laptop"})
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()

	env.Agent.HandleExec(func(req *wire.ExecRequest) (*wire.ExecResult, error) {
		return &wire.ExecResult{Stdout: []byte("ran " + req.Command + "\n")}, nil
	})
	env.Agent.HandleReadFile(func(path string) ([]byte, error) {
		if path != "notes.txt" {
			return nil, wire.Errorf(wire.CodeNotFound, "", "no %s", path)
		}
		return []byte("remember the milk\n"), nil
	})

	// The program under test: the client's default workspace is the
	// mock's, so "" names it.
	c := client.New(env.Server.URL(), env.Server.AdminToken(), client.WithWorkspace("default"))
	laptop := c.Agent("", "laptop")
	res, err := laptop.Exec(ctx, client.ExecRequest{Command: "make test"})
	fmt.Printf("%q %v\n", res.Stdout, err)
	f, err := laptop.Get(ctx, "notes.txt")
	if err != nil {
		log.Fatal(err)
	}
	data, err := io.ReadAll(f.Body)
	f.Body.Close()
	fmt.Printf("%q %v\n", data, err)
	_, err = laptop.Get(ctx, "other.txt")
	fmt.Println("missing file is not_found:", errors.Is(err, wire.ErrNotFound))
	fmt.Println("exec requests seen:", env.Agent.Count(wire.OpExec))
	// Output:
	// "ran make test\n" <nil>
	// "remember the milk\n" <nil>
	// missing file is not_found: true
	// exec requests seen: 1
}

// A real agent serves a directory in-process, for what a mock cannot show:
// client.Run streams a real process's output as it comes and returns its
// exit code.
func ExampleEnv_RealAgent() {
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
	var stderr strings.Builder
	code, err := client.Run(ctx, box, "echo one; echo two; echo oops >&2; exit 3", os.Stdout, &stderr)
	fmt.Printf("exit %d %v, stderr %q\n", code, err, stderr.String())
	// Output:
	// one
	// two
	// exit 3 <nil>, stderr "oops\n"
}

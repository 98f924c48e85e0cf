//go:build unix

package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/wire"
)

// TestRefusesWhatNoProgramCanReceive: NUL bytes in argv, command, cwd or
// env and an argument list over the system's limit are invalid_argument,
// for Exec and Start alike, and the message names neither the agent's PATH
// nor its environment nor where the executable lives.
func TestRefusesWhatNoProgramCanReceive(t *testing.T) {
	m, root := newTestManager(t)
	bin := filepath.Join(t.TempDir(), "secret-bin-dir")
	mkdir(t, bin)
	writeFile(t, filepath.Join(bin, "myprog"), "#!/bin/sh\necho \"$@\"\n", 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("AGENT_ONLY_SECRET", "s3cr3t-value")
	huge := strings.Repeat("a", 256<<10) // over Linux's 128 KiB for one string
	many := make([]string, 0, 4097)
	many = append(many, "myprog")
	for range 4096 {
		many = append(many, strings.Repeat("b", 1<<10)) // 4 MiB: over ARG_MAX
	}
	tests := []struct {
		name    string
		argv    []string
		command string
		cwd     string
		env     map[string]string
	}{
		{name: "NUL in argv", argv: []string{"myprog", "a\x00b"}},
		{name: "NUL in argv0", argv: []string{"my\x00prog"}},
		{name: "NUL in command", command: "echo a\x00b"},
		{name: "NUL in cwd", argv: []string{"myprog"}, cwd: "a\x00b"},
		{name: "NUL in env value", argv: []string{"myprog"}, env: map[string]string{"K": "a\x00b"}},
		{name: "NUL in env name", argv: []string{"myprog"}, env: map[string]string{"K\x00": "v"}},
		{name: "one huge argument", argv: []string{"myprog", huge}},
		{name: "huge command", command: "echo " + huge},
		{name: "too many arguments", argv: many},
		{name: "huge env value", argv: []string{"myprog"}, env: map[string]string{"BIG": huge}},
	}
	for _, tt := range tests {
		for _, via := range []string{"exec", "start"} {
			t.Run(tt.name+"/"+via, func(t *testing.T) {
				var err error
				if via == "exec" {
					_, err = m.Exec(context.Background(), ExecRequest{Argv: tt.argv, Command: tt.command, Cwd: tt.cwd, Env: tt.env})
				} else {
					_, _, err = m.Start(StartRequest{Argv: tt.argv, Command: tt.command, Cwd: tt.cwd, Env: tt.env})
				}
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != wire.CodeInvalidArgument {
					t.Fatalf("err = %.300v, want invalid_argument", err)
				}
				for _, leak := range []string{bin, "secret-bin-dir", "s3cr3t-value", os.Getenv("PATH"), root} {
					if strings.Contains(we.Message, leak) {
						t.Fatalf("message %.300q holds %.60q", we.Message, leak)
					}
				}
				if len(we.Message) > 300 {
					t.Fatalf("message of %d bytes: %.300q...", len(we.Message), we.Message)
				}
			})
		}
	}
	if len(m.List()) != 0 {
		t.Fatalf("processes were started: %+v", m.List())
	}
}

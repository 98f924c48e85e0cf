package main

import (
	"context"
	"flag"
	"io"
	"reflect"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
)

// The target flags pick the path prefix: flags over the environment,
// a session over an agent in the environment, never both flags.
func TestTargetFlags(t *testing.T) {
	cl := client.New("http://127.0.0.1:1", "tok")
	tests := []struct {
		name       string
		args       []string
		envSession string
		envAgent   string
		want       *client.Target
		wantErr    bool
	}{
		{"--session", []string{"--session", "s1"}, "", "", cl.Session("w", "s1"), false},
		{"--agent", []string{"--agent", "a1"}, "", "", cl.Agent("w", "a1"), false},
		{"both flags", []string{"--agent", "a1", "--session", "s1"}, "", "", nil, true},
		{"OUTPOST_SESSION", nil, "s2", "a2", cl.Session("w", "s2"), false},
		{"OUTPOST_AGENT", nil, "", "a2", cl.Agent("w", "a2"), false},
		{"--agent over OUTPOST_SESSION", []string{"--agent", "a1"}, "s2", "", cl.Agent("w", "a1"), false},
		{"--session over OUTPOST_AGENT", []string{"--session", "s1"}, "", "a2", cl.Session("w", "s1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OUTPOST_SESSION", tt.envSession)
			t.Setenv("OUTPOST_AGENT", tt.envAgent)
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			tf := addTargetFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := tf.target(context.Background(), cl, "w")
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got target %+v, want an error", got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

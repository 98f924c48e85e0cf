package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Where a client command's URL, token and workspace come from: the flag,
// else the environment, else the context (the current one only when the
// environment names no control plane), else the default; a context's
// token never goes to another URL.
func TestClientFlagsResolve(t *testing.T) {
	const ctxURL, otherURL = "https://cp.example:7443", "http://127.0.0.1:9999"
	store := &contextStore{Current: "main", Contexts: map[string]savedContext{
		"main": {URL: ctxURL, Token: "opk_main", Workspace: "team"},
		"ci":   {URL: otherURL, Token: "opk_ci"},
	}}
	tests := []struct {
		name                     string
		env                      map[string]string
		flags                    clientFlags
		noContexts               bool
		noConfigDir              bool // neither OUTPOST_CONFIG_DIR nor $HOME
		wantURL, wantTok, wantWS string
		wantErr                  string
	}{
		{name: "current context", wantURL: ctxURL, wantTok: "opk_main", wantWS: "team"},
		{name: "no contexts, no env", noContexts: true, wantErr: "no token"},
		{name: "env names the control plane", env: map[string]string{"OUTPOST_URL": otherURL, "OUTPOST_TOKEN": "opk_env"}, wantURL: otherURL, wantTok: "opk_env", wantWS: "default"},
		{name: "env URL alone: no context", env: map[string]string{"OUTPOST_URL": otherURL}, wantErr: "no token"},
		{name: "env token alone: default URL", env: map[string]string{"OUTPOST_TOKEN": "opk_env"}, wantURL: defaultURL, wantTok: "opk_env", wantWS: "default"},
		{name: "--context", flags: clientFlags{context: "ci"}, wantURL: otherURL, wantTok: "opk_ci", wantWS: "default"},
		{name: "OUTPOST_CONTEXT", env: map[string]string{"OUTPOST_CONTEXT": "ci"}, wantURL: otherURL, wantTok: "opk_ci", wantWS: "default"},
		{name: "--context with env workspace", flags: clientFlags{context: "main"}, env: map[string]string{"OUTPOST_WORKSPACE": "w9"}, wantURL: ctxURL, wantTok: "opk_main", wantWS: "w9"},
		{name: "--context with another --url keeps its token", flags: clientFlags{context: "main", url: otherURL}, wantErr: "no token"},
		{name: "--context with its own --url", flags: clientFlags{context: "main", url: ctxURL}, wantURL: ctxURL, wantTok: "opk_main", wantWS: "team"},
		{name: "flags win", flags: clientFlags{context: "main", token: "opk_flag", workspace: "w1"}, env: map[string]string{"OUTPOST_TOKEN": "opk_env"}, wantURL: ctxURL, wantTok: "opk_flag", wantWS: "w1"},
		{name: "unknown context", flags: clientFlags{context: "nope"}, wantErr: `no context "nope"`},
		{name: "no config dir at all", noConfigDir: true, wantErr: "no token"},
		{name: "no config dir, a context named", noConfigDir: true, flags: clientFlags{context: "main"}, wantErr: "OUTPOST_CONFIG_DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, k := range []string{"OUTPOST_URL", "OUTPOST_TOKEN", "OUTPOST_WORKSPACE", "OUTPOST_CONTEXT", "OUTPOST_CA_FILE"} {
				t.Setenv(k, tt.env[k])
			}
			t.Setenv("OUTPOST_CONFIG_DIR", dir)
			if tt.noConfigDir {
				t.Setenv("OUTPOST_CONFIG_DIR", "")
				t.Setenv("HOME", "")
				t.Setenv("XDG_CONFIG_HOME", "")
			}
			if !tt.noContexts {
				if err := store.save(filepath.Join(dir, "contexts.json")); err != nil {
					t.Fatal(err)
				}
			}
			c := tt.flags
			cl, err := c.client()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cl.BaseURL != tt.wantURL || c.token != tt.wantTok || c.workspace != tt.wantWS {
				t.Fatalf("got %s %s %s, want %s %s %s", cl.BaseURL, c.token, c.workspace, tt.wantURL, tt.wantTok, tt.wantWS)
			}
		})
	}
}

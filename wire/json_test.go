package wire

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// The types that serve the wire and the HTTP API alike (one type per shape)
// encode to API.md's JSON fields, whatever their msgpack tags.
func TestSharedTypesJSONFields(t *testing.T) {
	code := 0
	tests := []struct {
		name string
		v    any
		want string // the JSON object's keys, sorted, comma-separated
	}{
		{"exec result (base64)", ExecResult{}, "durationMs,exitCode,stderr,stdout,timedOut,truncated"},
		{"git status", GitStatus{}, "branch,entries,isRepo"},
		{"git branch", GitBranch{}, "ahead,behind,detached,head,oid,unborn,upstream"},
		{"git status entry", GitStatusEntry{OrigPath: "o"}, "index,kind,origPath,path,worktree"},
		{"git diff", GitDiff{}, "files,patch"},
		{"git diff file", GitDiffFile{OldPath: "o"}, "added,binary,deleted,oldPath,path"},
		{"git log", GitLog{}, "commits"},
		{"git commit", GitCommit{}, "author,email,oid,subject,time"},
		{"git commit result", GitCommitResult{}, "oid,summary"},
		{"git apply result", GitApplyResult{}, "applied"},
		{"transition", Transition{Agent: "a"}, "agent,at,epoch,from,to"},
		{"process started", ProcStartResult{}, "id,pid"},
		{"process start request", ProcStartRequest{ID: "p", Argv: []string{"a"}, Command: "c", Cwd: "d", Env: map[string]string{"K": "V"}, TTY: true, Cols: 1, Rows: 1, Stdin: true, Detached: true, Hangup: true, TimeoutMs: 1}, "argv,cols,command,cwd,detached,env,hangup,id,rows,stdin,timeoutMs,tty"},
		{"process running", ProcInfo{}, "argv,closed,detached,exitCode,id,pid,running,startedAt,timedOut,tty"},
		{"process exited", ProcInfo{ExitCode: &code, ExitedAt: time.Unix(1, 0)}, "argv,closed,detached,exitCode,exitedAt,id,pid,running,startedAt,timedOut,tty"},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if got := strings.Join(keys, ","); got != tt.want {
			t.Errorf("%s: JSON fields %s, want %s", tt.name, got, tt.want)
		}
	}
	if b, _ := json.Marshal(ProcInfo{}); !strings.Contains(string(b), `"exitCode":null`) {
		t.Errorf("a running process's exitCode is not null: %s", b)
	}
}

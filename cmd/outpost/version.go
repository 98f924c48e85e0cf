package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/outposthq/outpost/wire"
)

// commit is the commit a release was built from, set with -ldflags
// "-X main.commit=..."; without it, the Go toolchain's VCS stamp is used
// (absent in builds with -buildvcs=false or from a git worktree).
var commit = ""

// versionInfo is what `outpost version` prints: the release, the commit it
// was built from (the Go toolchain stamps it from git), the Go toolchain
// and the wire protocol version agents and control plane speak.
type versionInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commitTime,omitempty"`
	// Modified says the build had uncommitted changes.
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Protocol int    `json:"protocol"`
}

// buildVersion reads the version from the binary's build information.
func buildVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Protocol: wire.Version}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version // go install module@version
	}
	if commit != "" {
		return v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "[--json]", stderr)
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	v := buildVersion()
	if *asJSON {
		return printJSON(stdout, v)
	}
	commit := "unknown (built without version control information)"
	if v.Commit != "" {
		commit = v.Commit
		if v.CommitTime != "" {
			commit += " (" + v.CommitTime + ")"
		}
		if v.Modified {
			commit += ", with uncommitted changes"
		}
	}
	_, err := fmt.Fprintf(stdout, "outpost %s\ncommit    %s\ngo        %s %s\nprotocol  %d\n", v.Version, commit, v.Go, v.Platform, v.Protocol)
	return err
}

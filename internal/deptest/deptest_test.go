// Package deptest keeps the dependency boundaries honest: what the agent
// links (it runs on users' laptops), what the protocol packages import.
package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// agentForbidden are packages the agent build must never link: the NATS
// server (a server CVE is not an agent release), JetStream (agents have
// none), the control plane and its signing authority (a laptop holds no
// signing key), the web console (the control plane serves it), and the
// testing package.
var agentForbidden = []string{
	"github.com/nats-io/nats-server/v2",
	"github.com/nats-io/nats.go/jetstream",
	"github.com/outposthq/outpost/controlplane",
	"github.com/outposthq/outpost/authority",
	"github.com/outposthq/outpost/routing",
	"github.com/outposthq/outpost/release", // the release signing key's side
	"github.com/outposthq/outpost/console",
	"testing",
}

// allowedUnder are packages under a forbidden prefix that the agent build
// may link: the control plane's HTTP SDK, which the client commands use.
var allowedUnder = map[string]bool{
	"github.com/outposthq/outpost/controlplane/client": true,
}

func TestAgentBuildLinksNoServer(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, pkgs := range [][]string{{"-tags", "agent", "../../cmd/outpost"}, {"../../agent/..."}} {
			deps := goList(t, goos, pkgs...)
			if len(deps) < 20 {
				t.Fatalf("GOOS=%s go list %v: only %d packages, the listing is broken", goos, pkgs, len(deps))
			}
			for _, d := range deps {
				if bad := forbidden(d, agentForbidden); bad != "" && !allowedUnder[d] {
					t.Errorf("GOOS=%s %v links %s (forbidden: %s)", goos, pkgs, d, bad)
				}
			}
		}
	}
}

// The protocol packages import only the standard library and msgpack, so
// any program can speak the protocol.
func TestProtocolPackagesStayLean(t *testing.T) {
	for _, pkg := range []string{"../../wire", "../../subjects"} {
		for _, d := range goList(t, "linux", pkg) {
			if !strings.Contains(strings.SplitN(d, "/", 2)[0], ".") {
				continue // the standard library
			}
			if strings.HasPrefix(d, "github.com/vmihailenco/") || strings.HasPrefix(d, "github.com/outposthq/outpost/wire") ||
				strings.HasPrefix(d, "github.com/outposthq/outpost/subjects") {
				continue
			}
			t.Errorf("%s imports %s", pkg, d)
		}
	}
}

// proxy is linked by the agent and the SDK alike: the standard library only.
func TestProxyImportsOnlyTheStandardLibrary(t *testing.T) {
	for _, d := range goList(t, "linux", "../../proxy") {
		if strings.Contains(strings.SplitN(d, "/", 2)[0], ".") && d != "github.com/outposthq/outpost/proxy" {
			t.Errorf("proxy imports %s", d)
		}
	}
}

// The agent's domain packages return domain errors and know nothing of the
// wire: the agent maps their errors in one place (agent/errors.go).
func TestDomainPackagesDoNotImportWire(t *testing.T) {
	for _, pkg := range []string{"../../agent/files", "../../agent/git"} {
		for _, goos := range []string{"linux", "windows"} {
			for _, d := range goList(t, goos, pkg) {
				if d == "github.com/outposthq/outpost/wire" {
					t.Errorf("GOOS=%s %s imports %s", goos, pkg, d)
				}
			}
		}
	}
}

// forbidden returns the entry of list that pkg is, or is under.
func forbidden(pkg string, list []string) string {
	for _, f := range list {
		if pkg == f || strings.HasPrefix(pkg, f+"/") {
			return f
		}
	}
	return ""
}

func goList(t *testing.T, goos string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps"}, args...)...)
	cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list -deps %v: %v", goos, args, err)
	}
	return strings.Fields(string(out))
}

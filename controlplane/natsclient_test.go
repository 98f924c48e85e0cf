package controlplane

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// serveNATSClient reaches an unexported nats-server function by name: a
// nats-server other than the one it was written against must be read again
// before it runs (natsclient.go). Test binaries carry no dependency
// versions, so the module's go.mod is read.
func TestNATSServerVersionPinned(t *testing.T) {
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/nats-io/nats-server/v2 (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod requires no nats-server")
	}
	// The replace is third_party/nats-server, a copy of the version
	// required with third_party/nats-server.patch, which leaves
	// createClientInProcess alone; any other replacement is to be read.
	if r := regexp.MustCompile(`(?m)^(replace)?\s*github\.com/nats-io/nats-server/v2( \S+)?\s*=>.*$`).Find(b); r != nil {
		if !regexp.MustCompile(`=>\s*\./third_party/nats-server\s*$`).Match(r) {
			t.Fatalf("go.mod replaces nats-server (%s): check createClientInProcess in the replacement, then change this test", r)
		}
		up, err := os.ReadFile("../third_party/nats-server/UPSTREAM")
		if err != nil {
			t.Fatal(err)
		}
		if v := strings.TrimSpace(string(up)); v != string(m[1]) {
			t.Fatalf("third_party/nats-server is a copy of %s, go.mod requires %s: run scripts/nats-server-copy %s", v, m[1], m[1])
		}
	}
	if v := string(m[1]); v != pinnedNATSServer {
		t.Fatalf("nats-server is %s; natsclient.go's createClientInProcess was checked against %s: check its signature in the new version, then update pinnedNATSServer", v, pinnedNATSServer)
	}
}

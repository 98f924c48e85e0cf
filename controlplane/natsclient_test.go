package controlplane

import (
	"os"
	"regexp"
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
	if regexp.MustCompile(`(?m)^replace\s.*nats-server`).Match(b) {
		t.Fatal("go.mod replaces nats-server: check createClientInProcess in the replacement, then change this test")
	}
	if v := string(m[1]); v != pinnedNATSServer {
		t.Fatalf("nats-server is %s; natsclient.go's createClientInProcess was checked against %s: check its signature in the new version, then update pinnedNATSServer", v, pinnedNATSServer)
	}
}

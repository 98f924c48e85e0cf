package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// A newcomer runs `serve --tls-self-signed`, pastes the enrollCommand a
// token comes with on the machine, runs the agent and a command: every step
// over TLS, the agent on wss:// through the API's one port, trusting only
// the pinned CA.
func TestNewcomerOverTLS(t *testing.T) {
	port, natsPort, state := freePort(t), freePort(t), privateDir(t)
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	serve := startProc(t, []string{"OUTPOST_ADMIN_TOKEN=" + adminToken}, "serve",
		"--listen", "127.0.0.1:"+strconv.Itoa(port), "--nats-listen", "127.0.0.1:"+strconv.Itoa(natsPort),
		"--state-dir", state, "--tls-self-signed", "127.0.0.1,localhost")
	caFile := filepath.Join(state, "tls", "ca.pem")
	var hc *http.Client
	waitFor(t, startTimeout, "serve over TLS", func() error {
		if hc == nil {
			pemBytes, err := os.ReadFile(caFile)
			if err != nil {
				return err
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pemBytes)
			hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		}
		resp, err := hc.Get(url + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	// serve prints how to trust it once it listens: wait for the lines
	// (read at once, they raced /healthz's answer and failed once in CI).
	waitFor(t, startTimeout, "serve to say how to trust it", func() error {
		if out := serve.output(); !strings.Contains(out, "CA fingerprint") || !strings.Contains(out, "OUTPOST_CA_FILE="+caFile) {
			return fmt.Errorf("serve does not say how to trust it:\n%s", out)
		}
		return nil
	})

	cl := client.New(url, adminToken)
	cl.HTTP = hc
	if _, err := cl.CreateWorkspace(ctx(t), "default"); err != nil {
		t.Fatal(err)
	}
	tok, err := cl.CreateEnrollmentToken(ctx(t), "default", client.EnrollmentTokenRequest{Agent: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	// Paste the line as given; only the program's path and the config's
	// home-relative path are this test's own.
	config := filepath.Join(t.TempDir(), "agent.json")
	args := strings.Fields(tok.EnrollCommand)
	if len(args) < 3 || args[0] != "outpost" || !strings.Contains(tok.EnrollCommand, "--ca-sha256 "+tok.CASHA256) {
		t.Fatalf("enrollCommand %q", tok.EnrollCommand)
	}
	for i, a := range args {
		if a == "~/.outpost/agent.json" {
			args[i] = config
		}
	}
	if out, err := exec.Command(outpostBin, args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", tok.EnrollCommand, err, out)
	}
	startAgent(t, config, t.TempDir())
	waitFor(t, statusTimeout, "agent online over wss", func() error {
		a, err := cl.GetAgent(ctx(t), "default", "laptop")
		if err != nil {
			return err
		}
		if a.Status != "online" {
			return errStatus(a.Status)
		}
		return nil
	})
	cmd := exec.Command(outpostBin, "exec", "--agent", "laptop", "--", "echo", "over-tls")
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+url, "OUTPOST_TOKEN="+adminToken, "OUTPOST_CA_FILE="+caFile)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "over-tls" {
		t.Fatalf("outpost exec over TLS: %v\n%s", err, out)
	}
	// Without the CA the CLI refuses the control plane's certificate.
	cmd = exec.Command(outpostBin, "exec", "--agent", "laptop", "--", "true")
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+url, "OUTPOST_TOKEN="+adminToken, "OUTPOST_CA_FILE=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "certificate") {
		t.Fatalf("exec trusting the system's roots only: %v\n%s", err, out)
	}

	// port-forward over HTTPS (its streams' TLS on a bulk connection):
	// megabytes each way, intact, and each side's half-close.
	const size = 3 << 20
	down := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	up := make(chan []byte, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		go func() { c.Write(down); c.(*net.TCPConn).CloseWrite() }()
		b, _ := io.ReadAll(c)
		up <- b
	}()
	pf := startProc(t, []string{"OUTPOST_URL=" + url, "OUTPOST_TOKEN=" + adminToken, "OUTPOST_WORKSPACE=default", "OUTPOST_CA_FILE=" + caFile},
		"port-forward", "--agent", "laptop", "0:"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	var local string
	waitFor(t, 15*time.Second, "port-forward listening", func() error {
		m := forwardingRE.FindStringSubmatch(pf.output())
		if m == nil {
			return fmt.Errorf("output so far: %q", pf.output())
		}
		local = "127.0.0.1:" + m[1]
		return nil
	})
	c, err := net.Dial("tcp", local)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	sent := bytes.Repeat([]byte("up"), size/2)
	go func() { c.Write(sent); c.(*net.TCPConn).CloseWrite() }()
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, down) {
		t.Fatalf("down through port-forward over TLS: %d of %d bytes, %v", len(got), len(down), err)
	}
	select {
	case b := <-up:
		if !bytes.Equal(b, sent) {
			t.Fatalf("up through port-forward over TLS: %d of %d bytes", len(b), len(sent))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the service never saw the client's end")
	}
}

type errStatus string

func (e errStatus) Error() string { return "status " + string(e) }

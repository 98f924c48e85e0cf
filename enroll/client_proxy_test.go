package enroll

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/outposthq/outpost/internal/tinyproxy"
	"github.com/outposthq/outpost/proxy"
	"github.com/outposthq/outpost/wire"
)

// Enrollment through a real forward proxy, and around it for NO_PROXY.
func TestEnrollThroughProxy(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	cp := newFakeControlPlane(t, func(w http.ResponseWriter, req Request) {
		if e := checkRequest(req); e != nil {
			writeError(w, e)
			return
		}
		token, err := a.IssueAgentJWT(testAgent, req.PublicKey)
		if err != nil {
			writeError(w, wire.Errorf(wire.CodeInternal, "", "%v", err))
			return
		}
		writeJSON(w, Response{Workspace: "ws", Agent: "a1", JWT: token, NATSURLs: []string{s.ClientURL()}})
	})
	p := tinyproxy.Start(t, tinyproxy.Options{})
	endpoint := cp.srv.URL + EnrollPath

	if _, err := Enroll(context.Background(), cp.srv.URL, "opt_good", "", WithProxy(proxy.Fixed(p.URL, ""))); err != nil {
		t.Fatalf("Enroll through the proxy: %v", err)
	}
	if n := p.Count("POST", endpoint); n != 1 {
		t.Fatalf("tinyproxy logged %d POSTs to %s, want 1; requests %q", n, endpoint, p.Requests())
	}

	if _, err := Enroll(context.Background(), cp.srv.URL, "opt_good", "", WithProxy(proxy.Fixed(p.URL, "127.0.0.1"))); err != nil {
		t.Fatalf("Enroll with NO_PROXY: %v", err)
	}
	if n := p.Count("POST", endpoint); n != 1 {
		t.Fatalf("tinyproxy logged %d POSTs to %s, want still 1: NO_PROXY goes around it", n, endpoint)
	}
}

// A proxy that is not there is an error that names it, never a direct try.
func TestEnrollProxyDown(t *testing.T) {
	cp := newFakeControlPlane(t, func(w http.ResponseWriter, req Request) {
		t.Error("the request went around the proxy")
	})
	down := &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	_, err := Enroll(context.Background(), cp.srv.URL, "opt_good", "", WithProxy(proxy.Fixed(down, "")))
	var we *wire.Error
	if err == nil || errors.As(err, &we) || !strings.Contains(err.Error(), "proxyconnect tcp") {
		t.Fatalf("got %v, want an error connecting to the proxy", err)
	}
}

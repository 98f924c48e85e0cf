//go:build !agent

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// `serve --pprof ADDR` serves Go's profiles on ADDR until the server stops.
func TestServePprof(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var log bytes.Buffer
	if err := servePprof(ctx, addr, nil, &log); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("goroutine profile: %s %.100q", resp.Status, body)
	}
	if !strings.Contains(log.String(), addr) {
		t.Fatalf("no address in %q", log.String())
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := http.Get("http://" + addr + "/debug/pprof/"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pprof still served after the server stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRotateBySize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 100 {
		if err := l.Append(Event{Time: time.Now(), Op: "fs.stat", Path: strings.Repeat("p", i%20), Result: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	lines := 0
	for _, name := range []string{path, path + ".1", path + ".2", path + ".3"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fi.Size() > 1000 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes mode %v, want at most 1000 and 0600", name, fi.Size(), fi.Mode())
		}
		b, _ := os.ReadFile(name)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("%s: line %q: %v", name, line, err)
			}
			lines++
		}
	}
	if _, err := os.Stat(path + ".4"); err == nil {
		t.Errorf("more than %d rotated files kept", Keep)
	}
	if lines >= 100 || lines < 10 {
		t.Errorf("%d lines kept in the files, want the newest only", lines)
	}
}

// syncBuf is a bytes.Buffer safe for Copy's writes and the test's reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestCopyFollowsAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, 300)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Append(Event{Op: "first", Result: "ok"})
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuf
	done := make(chan error, 1)
	go func() { done <- Copy(ctx, path, &out, true) }()
	for start := time.Now(); !strings.Contains(out.String(), `"op":"first"`); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("Copy printed nothing")
		}
	}
	// Five events over two lines a file: rotated out, but all still kept.
	for i := range 5 {
		l.Append(Event{Op: "op" + string(rune('a'+i)), Path: strings.Repeat("x", 50), Result: "ok"})
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"op":"ope"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"first", "opa", "opb", "opc", "opd", "ope"} {
		if !strings.Contains(out.String(), `"op":"`+op+`"`) {
			t.Errorf("followed copy lacks %s:\n%s", op, out.String())
		}
	}
}

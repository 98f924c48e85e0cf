//go:build !agent

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/outposthq/outpost/internal/filelock"
)

// One `outpost up` at a time per state dir: it holds up.lock there while it
// runs and writes its URL to up.url, so that a second one says where the
// first is instead of failing on a port or fighting over the state.

// lockUpState makes the state dir (0700) and locks it; when another up
// holds it, the error says at which URL that one serves.
func lockUpState(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	f, err := filelock.Lock(filepath.Join(dir, "up.lock"))
	if errors.Is(err, filelock.ErrLocked) {
		url := "an address it has not written yet"
		if b, err := os.ReadFile(filepath.Join(dir, "up.url")); err == nil && len(b) > 0 {
			url = strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("already running at %s (state dir %s): use that one (its first lines say how), stop it with Ctrl-C, or pass another --state-dir", url, dir)
	}
	if err != nil {
		return nil, err
	}
	return func() {
		os.Remove(filepath.Join(dir, "up.url"))
		f.Close()
	}, nil
}

// recordUpURL writes the URL the locked state dir's up serves at.
func recordUpURL(dir, url string) error {
	return os.WriteFile(filepath.Join(dir, "up.url"), []byte(url+"\n"), 0o600)
}

// setFlags are the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// checkListen checks that addr can be listened on; the error says which
// flag named it and what to do.
func checkListen(addr, flagName string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s %s: %w (is another program, or another outpost, listening there? pick another address with %s)", flagName, addr, err, flagName)
	}
	return l.Close()
}

// freeListen checks that addr can be listened on. When it cannot and the
// address is the default (not given), it returns a free port on the same
// host instead and says so on w; an address given that is taken is an
// error that says so and what to do.
func freeListen(addr, flagName string, given bool, w io.Writer) (string, error) {
	err := checkListen(addr, flagName)
	if err == nil || given {
		return addr, err
	}
	host, _, _ := net.SplitHostPort(addr)
	l, err2 := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err2 != nil {
		return "", fmt.Errorf("%w; and no free port on %s: %v", err, host, err2)
	}
	free := l.Addr().String()
	l.Close()
	fmt.Fprintf(w, "outpost up: %s is taken; using %s instead (%s chooses)\n", addr, free, flagName)
	return free, nil
}

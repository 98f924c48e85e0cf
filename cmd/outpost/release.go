//go:build !agent

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/outposthq/outpost/release"
)

// `outpost release keygen|publish`: the publisher's side of agent
// self-update. Not in the agent build: the agent never holds the key.
func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := "usage: outpost release keygen --key FILE | publish --key FILE --dir DIR --version V [--force] OS/ARCH=BINARY..."
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("missing subcommand")
	}
	switch args[0] {
	case "keygen":
		fs := newFlags("release keygen", "--key FILE", stderr)
		key := fs.String("key", "", "where to write the private key (mode 0600; never overwritten)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *key == "" {
			return fmt.Errorf("--key is required")
		}
		pub, err := release.WriteKey(*key)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "private key written to %s (keep it secret)\npublic key: %s\nbuild agents with: go build -ldflags \"-X main.releaseKey=%s -X main.version=VERSION\" ./cmd/outpost\n", *key, pub, pub)
		return err
	case "publish":
		return releasePublish(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return flag.ErrHelp
	}
	return fmt.Errorf("unknown subcommand %q (want keygen or publish)", args[0])
}

func releasePublish(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("release publish", "--key FILE --dir DIR --version V [--force] OS/ARCH=BINARY...", stderr)
	key := fs.String("key", "", "the private key 'release keygen' wrote")
	dir := fs.String("dir", "", "the releases directory 'serve --agent-releases' serves")
	ver := fs.String("version", "", "the release's version, MAJOR.MINOR.PATCH (as built in with -X main.version)")
	force := fs.Bool("force", false, "agents update at once, not waiting for live processes and transfers to end")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *key == "" || *dir == "" || *ver == "" || len(pos) == 0 {
		fs.Usage()
		return fmt.Errorf("--key, --dir, --version and at least one OS/ARCH=BINARY are required")
	}
	priv, err := release.LoadKey(*key)
	if err != nil {
		return err
	}
	var bins []release.Binary
	for _, p := range pos {
		plat, path, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("%q: want OS/ARCH=BINARY", p)
		}
		bins = append(bins, release.Binary{Platform: plat, Path: path})
	}
	m, err := release.Publish(*dir, *ver, priv, bins, *force)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "published %s for %d platform(s) in %s\n", m.Version, len(m.Files), *dir)
	return err
}

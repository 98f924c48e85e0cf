// Command errgen generates Outpost's error constants and the error tables of
// its docs from wire/reasons.json, the one table of codes and reasons (as
// nats-server generates its JetStream errors from server/errors.json). Run it
// with `go generate ./wire`; it writes wire/errors_generated.go and the
// generated sections of wire/PROTOCOL.md and docs/API.md. Its test fails when
// a generated file is out of date, and when any Go source outside the table
// spells a reason as a string literal.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("wire", ".", "the wire package's directory")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "errgen:", err)
		os.Exit(1)
	}
}

// run regenerates every file from dir/reasons.json, writing only those that
// changed.
func run(dir string) error {
	t, err := load(filepath.Join(dir, "reasons.json"))
	if err != nil {
		return err
	}
	files, err := render(t, func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, p)) })
	if err != nil {
		return err
	}
	for p, content := range files {
		name := filepath.Join(dir, p)
		if old, err := os.ReadFile(name); err == nil && string(old) == string(content) {
			continue
		}
		if err := os.WriteFile(name, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

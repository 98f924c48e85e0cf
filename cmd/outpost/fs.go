package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/outposthq/outpost/controlplane/client"
)

// runFs is `outpost fs ls|get|put|rm`.
func runFs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	subs := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"ls": runFsLs, "get": runFsGet, "put": runFsPut, "rm": runFsRm,
	}
	if len(args) == 0 || subs[args[0]] == nil {
		fmt.Fprintln(stderr, "usage: outpost fs ls|get|put|rm [flags] ...\n\nRun 'outpost fs <command> --help' for its flags.")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return fmt.Errorf("want ls, get, put or rm")
	}
	return subs[args[0]](ctx, args[1:], stdout, stderr)
}

func runFsLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs ls", "[-r] [PATH]", stderr)
	tf := addTargetCommand(fs)
	rec := fs.Bool("r", false, "list subdirectories too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("at most one path")
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	es, err := t.List(ctx, fs.Arg(0), *rec)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 1, ' ', tabwriter.AlignRight)
	for _, e := range es {
		name := e.Path
		switch e.Type {
		case "dir":
			name += "/"
		case "symlink":
			name += " -> " + e.LinkTarget
		}
		fmt.Fprintf(tw, "%s %s\t%d\t %s %s\n", typeLetter(e.Type), e.Mode, e.Size, e.ModTime.Local().Format("2006-01-02 15:04"), name)
	}
	return tw.Flush()
}

func typeLetter(t string) string {
	switch t {
	case "dir":
		return "d"
	case "symlink":
		return "l"
	case "file":
		return "-"
	}
	return "?"
}

func runFsGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs get", "REMOTE [LOCAL|-]", stderr)
	tf := addTargetCommand(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return fmt.Errorf("want REMOTE and optionally LOCAL (- for stdout)")
	}
	remote, local := fs.Arg(0), fs.Arg(1)
	if local == "" {
		local = path.Base(remote)
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	f, err := t.Get(ctx, remote)
	if err != nil {
		return err
	}
	defer f.Body.Close()
	p := newProgress(stderr, f.Size)
	if local == "-" {
		_, err = io.Copy(progressWriter{stdout, p}, f.Body)
		p.finish()
		return err
	}
	err = writeLocal(local, progressReader{f.Body, p})
	p.finish()
	return err
}

// writeLocal writes r to name atomically: a temporary file beside it,
// renamed into place only when all of r arrived.
func writeLocal(name string, r io.Reader) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".outpost-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return fmt.Errorf("download: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

func runFsPut(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs put", "LOCAL|- REMOTE", stderr)
	tf := addTargetCommand(fs)
	mode := fs.String("mode", "", "permission bits in octal, e.g. 0644 (default: keep the existing file's)")
	noOverwrite := fs.Bool("no-overwrite", false, "fail if REMOTE exists")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return fmt.Errorf("want LOCAL (- for stdin) and REMOTE")
	}
	opts := client.PutOptions{NoOverwrite: *noOverwrite}
	if *mode != "" {
		m, err := strconv.ParseUint(*mode, 8, 32)
		if err != nil || m > 0o777 {
			return fmt.Errorf("--mode must be octal permission bits, not %q", *mode)
		}
		opts.Mode = uint32(m)
	}
	var body io.Reader = os.Stdin
	size := int64(-1)
	if local := fs.Arg(0); local != "-" {
		f, err := os.Open(local)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			size = fi.Size()
		}
		body = f
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	p := newProgress(stderr, size)
	res, err := t.Put(ctx, fs.Arg(1), progressReader{body, p}, size, opts)
	p.finish()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s  %d bytes  sha256 %s\n", res.Path, res.Size, res.SHA256)
	return nil
}

func runFsRm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs rm", "[-r] PATH...", stderr)
	tf := addTargetCommand(fs)
	rec := fs.Bool("r", false, "remove directories and their contents")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("no path given")
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	for _, p := range fs.Args() {
		if err := t.Remove(ctx, p, *rec); err != nil {
			return err
		}
	}
	return nil
}

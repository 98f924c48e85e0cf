package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// fsCommands are `outpost fs ...`: files on an agent or session.
var fsCommands = []leafCommand{
	{"ls", "list a directory", runFsLs},
	{"stat", "describe a file, directory or symbolic link", runFsStat},
	{"get", "download a file (to stdout with -)", runFsGet},
	{"put", "upload a file (from stdin with -)", runFsPut},
	{"mkdir", "make a directory", runFsMkdir},
	{"mv", "move or rename", runFsMv},
	{"rm", "remove files or directories", runFsRm},
	{"search", "lines matching a literal or regex, .gitignore-aware", runFsSearch},
	{"find", "paths matching a glob", runFsFind},
	{"watch", "print changes under a directory as they happen", runFsWatch},
}

// runFs is `outpost fs ls|stat|get|put|mkdir|mv|rm`.
func runFs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runLeafGroup(ctx, "fs", fsCommands, args, stdout, stderr)
}

func runFsLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs ls", "[-r] [--json] [PATH]", stderr)
	tf := addTargetCommand(fs)
	rec := fs.Bool("r", false, "list subdirectories too")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atMost(fs, 1, "one PATH"); err != nil {
		return err
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	es, err := t.List(ctx, fs.Arg(0), *rec)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, client.FileList{Entries: es})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 1, ' ', tabwriter.AlignRight)
	for _, e := range es {
		fmt.Fprintf(tw, "%s %s\t%d\t %s %s\n", typeLetter(e.Type), e.Mode, e.Size, e.ModTime.Local().Format("2006-01-02 15:04"), entryName(e))
	}
	return tw.Flush()
}

// entryName is an entry's path as ls shows it: a directory with a slash, a
// link with its target.
func entryName(e client.FileStat) string {
	switch e.Type {
	case "dir":
		return e.Path + "/"
	case "symlink":
		return e.Path + " -> " + e.LinkTarget
	}
	return e.Path
}

func runFsStat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs stat", "[--json] PATH", stderr)
	tf := addTargetCommand(fs)
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 1, "one PATH"); err != nil {
		return err
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	st, err := t.Stat(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	return printStat(stdout, st, *asJSON)
}

// printStat prints what stat returns: as JSON, or a field a line.
func printStat(w io.Writer, st *client.FileStat, asJSON bool) error {
	if asJSON {
		return printJSON(w, st)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "path\t%s\ntype\t%s\nsize\t%d\nmode\t%s\nmodified\t%s\n",
		entryName(*st), st.Type, st.Size, st.Mode, st.ModTime.Local().Format(time.RFC3339))
	return tw.Flush()
}

func runFsMkdir(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs mkdir", "[-p] [--json] PATH...", stderr)
	tf := addTargetCommand(fs)
	parents := fs.Bool("p", false, "make missing parents too, and accept a directory that exists")
	asJSON := jsonFlag(fs)
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
	var made []client.FileStat
	for _, p := range fs.Args() {
		st, err := t.Mkdir(ctx, p, *parents)
		if err != nil {
			return fmt.Errorf("mkdir %s: %w", p, err)
		}
		made = append(made, *st)
	}
	if *asJSON {
		return printJSON(stdout, client.FileList{Entries: made})
	}
	return nil
}

func runFsMv(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs mv", "[-f] [--json] FROM TO", stderr)
	tf := addTargetCommand(fs)
	force := fs.Bool("f", false, "replace TO if it exists")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 2, "FROM and TO"); err != nil {
		return err
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	st, err := t.Move(ctx, fs.Arg(0), fs.Arg(1), *force)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, st)
	}
	return nil
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
	fs := newFlags("fs get", "[-r] REMOTE [LOCAL|-]", stderr)
	tf := addTargetCommand(fs)
	rec := fs.Bool("r", false, "a directory: its tree into the local directory LOCAL (a tar to stdout with -)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return fmt.Errorf("want REMOTE and optionally LOCAL (- for stdout), got %d arguments", fs.NArg())
	}
	remote, local := fs.Arg(0), fs.Arg(1)
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	if *rec {
		return getTree(ctx, t, remote, local, stdout)
	}
	if local == "" {
		local = path.Base(remote)
	}
	f, err := t.Get(ctx, remote)
	if errors.Is(err, wire.ErrInvalidArgument) {
		if st, serr := t.Stat(ctx, remote); serr == nil && st.Type == "dir" {
			return fmt.Errorf("%s is a directory: fs get fetches one file (a directory needs -r)", remote)
		}
	}
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
	fs := newFlags("fs put", "[-r] [--mode MODE] [--no-overwrite] [--json] LOCAL|- REMOTE", stderr)
	tf := addTargetCommand(fs)
	rec := fs.Bool("r", false, "a directory: its tree into the remote directory REMOTE")
	mode := fs.String("mode", "", "permission bits in octal, e.g. 0644 (default: keep the existing file's)")
	noOverwrite := fs.Bool("no-overwrite", false, "fail if REMOTE exists")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 2, "LOCAL (- for stdin) and REMOTE"); err != nil {
		return err
	}
	opts := client.PutOptions{NoOverwrite: *noOverwrite}
	if *mode != "" {
		m, err := strconv.ParseUint(*mode, 8, 32)
		if err != nil || m > 0o777 {
			return fmt.Errorf("--mode must be octal permission bits, not %q", *mode)
		}
		opts.Mode = uint32(m)
	}
	if *rec {
		return putTreeCmd(ctx, tf, fs.Arg(0), fs.Arg(1), *asJSON, stdout)
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
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory: fs put sends one file (a directory needs -r)", local)
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
	if *asJSON {
		return printJSON(stdout, res)
	}
	_, err = fmt.Fprintf(stdout, "%s  %d bytes  sha256 %s\n", res.Path, res.Size, res.SHA256)
	return err
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

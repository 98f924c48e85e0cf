package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"

	agentfs "github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/controlplane/client"
)

// getTree is `fs get -r REMOTE [LOCAL]`: the tree at REMOTE, as a tar
// stream from fs/archive, unpacked into the local directory LOCAL (made
// when missing; default REMOTE's base name). The unpack is confined to
// LOCAL by the same code the agent uses: an agent's archive cannot write
// outside LOCAL, follow a link out of it, or exceed the archive limits.
func getTree(ctx context.Context, t *client.Target, remote, local string, stdout io.Writer) error {
	if local == "" {
		local = path.Base(remote)
		if local == "/" || local == "." {
			return fmt.Errorf("fs get -r of the root wants a LOCAL directory")
		}
	}
	if local == "-" {
		rc, err := t.GetArchive(ctx, remote)
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(stdout, rc)
		return err
	}
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	dst, err := agentfs.New(local)
	if err != nil {
		return err
	}
	defer dst.Close()
	rc, err := t.GetArchive(ctx, remote)
	if err != nil {
		return err
	}
	defer rc.Close()
	res, err := dst.ExtractArchive(ctx, ".", rc, agentfs.DefaultArchiveLimits)
	if err != nil {
		return fmt.Errorf("unpacking into %s: %w", local, err)
	}
	_, err = fmt.Fprintf(stdout, "%s  %d files  %d dirs  %d links  %d bytes\n", local, res.Files, res.Dirs, res.Links, res.Bytes)
	return err
}

// putTree is `fs put -r LOCAL REMOTE`: the local directory LOCAL as a tar
// stream to fs/archive, unpacked into REMOTE (made when missing), each
// file atomically. Symlinks go as links; other special files are left out.
func putTree(ctx context.Context, t *client.Target, local, remote string) (*client.UnpackResult, error) {
	fi, err := os.Stat(local)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: fs put -r sends a directory (without -r, one file)", local)
	}
	src, err := agentfs.New(local)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(src.WriteArchive(ctx, ".", pw))
	}()
	res, err := t.PutArchive(ctx, remote, pr, -1)
	pr.CloseWithError(io.ErrClosedPipe)
	cancel()
	<-done
	return res, err
}

// putTreeCmd runs putTree and prints its result.
func putTreeCmd(ctx context.Context, tf *targetCommand, local, remote string, asJSON bool, stdout io.Writer) error {
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	res, err := putTree(ctx, t, local, remote)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, res)
	}
	_, err = fmt.Fprintf(stdout, "%s  %d files  %d dirs  %d links  %d bytes\n", res.Path, res.Files, res.Dirs, res.Links, res.Bytes)
	return err
}

package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ErrNotRunning: nothing answers on the socket (no daemon runs with that config).
var ErrNotRunning = errors.New("the agent is not running (nothing answers on its control socket)")

// dial connects to the socket at path.
func dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotRunning, path, err)
	}
	return c, nil
}

// Call sends cmd (status, pause or resume) and returns the daemon's status after it.
func Call(ctx context.Context, path, cmd string) (*Status, error) {
	c, err := dial(ctx, path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if err := send(c, Request{Cmd: cmd}); err != nil {
		return nil, err
	}
	var r Reply
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("control: read reply: %w", err)
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("control: bad reply: %w", err)
	}
	if r.Error != "" {
		return nil, errors.New(r.Error)
	}
	return r.Status, nil
}

// Audit copies the daemon's audit log to w; with follow it keeps copying
// what is appended until ctx ends.
func Audit(ctx context.Context, path string, w io.Writer, follow bool) error {
	c, err := dial(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := send(c, Request{Cmd: "audit", Follow: follow}); err != nil {
		return err
	}
	_, err = io.Copy(w, c)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func send(c net.Conn, r Request) error {
	b, _ := json.Marshal(r)
	_, err := c.Write(append(b, '\n'))
	return err
}

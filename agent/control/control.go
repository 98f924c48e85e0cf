// Package control is the agent's local control socket: a unix socket beside
// the agent's config file, mode 0600, through which the machine's owner
// asks the running daemon for its status, pauses and resumes it, and reads
// its audit log (outpost agent status|pause|resume|audit). Nothing reaches
// it over the network; only the owner (and root) may connect.
//
// The protocol is one JSON request line, {"cmd": "status"|"pause"|"resume"|
// "audit", "follow"?}, answered by one JSON line (Reply), or for audit by
// the log's lines, which with follow keep coming until the client hangs up.
package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// SocketPath is where the control socket of the agent with config file
// config lives.
func SocketPath(config string) string { return config + ".sock" }

// Status is what outpost agent status shows.
type Status struct {
	Workspace string    `json:"workspace"`
	Agent     string    `json:"agent"`
	Instance  string    `json:"instance"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
	URL       string    `json:"url"`
	Root      string    `json:"root"`
	StartedAt time.Time `json:"startedAt"`
	// Connection is the NATS link: "connected", "reconnecting", "starting", ...
	Connection string `json:"connection"`
	NATSServer string `json:"natsServer,omitempty"`
	Paused     bool   `json:"paused"`
	// LastError is the latest connection error, if any.
	LastError   string              `json:"lastError,omitempty"`
	LastErrorAt time.Time           `json:"lastErrorAt,omitzero"`
	PolicyFile  string              `json:"policyFile,omitempty"`
	Policy      *wire.PolicySummary `json:"policy,omitempty"`
}

// Request is one client request.
type Request struct {
	Cmd    string `json:"cmd"`
	Follow bool   `json:"follow,omitempty"`
}

// Reply answers status, pause and resume.
type Reply struct {
	Status *Status `json:"status,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// Daemon is what the socket controls.
type Daemon interface {
	Status() Status
	Pause()
	Resume()
	// Audit writes the audit log to w, and with follow what is appended
	// later, until ctx ends.
	Audit(ctx context.Context, w io.Writer, follow bool) error
}

// Server serves one socket. Close stops it and waits for its connections.
type Server struct {
	ln   net.Listener
	path string
	fi   os.FileInfo // the socket file, so Close removes only its own
	d    Daemon
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Listen makes the socket at path (owner-only) and serves d on it. A
// stale socket left by a crash is replaced; one a live daemon answers on
// is an error unless takeover (that daemon is being replaced).
func Listen(path string, d Daemon, takeover bool, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		if !takeover {
			return nil, fmt.Errorf("control: %s: another daemon answers on it (use --takeover to replace it)", path)
		}
	}
	_ = os.Remove(path)
	old := umask(0o177)
	ln, err := net.Listen("unix", path)
	umask(old)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false) // Close removes the file only if it is still ours
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("control: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{ln: ln, path: path, fi: fi, d: d, log: log, ctx: ctx, cancel: cancel}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Close stops serving, removes the socket and waits for open connections.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.cancel()
		if fi, err := os.Stat(s.path); err == nil && os.SameFile(fi, s.fi) {
			os.Remove(s.path) // not a successor's socket
		}
		s.ln.Close()
	})
	s.wg.Wait()
	return nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Warn("control socket", "err", err)
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
		}()
	}
}

// maxRequest bounds a request line.
const maxRequest = 4096

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(c, maxRequest)).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return
	}
	c.SetReadDeadline(time.Time{})
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		writeReply(c, Reply{Error: "bad request: " + err.Error()})
		return
	}
	switch req.Cmd {
	case "status":
	case "pause":
		s.d.Pause()
	case "resume":
		s.d.Resume()
	case "audit":
		// The client hanging up ends a follow: watch for it.
		go func() { io.Copy(io.Discard, c); cancel() }()
		if err := s.d.Audit(ctx, c, req.Follow); err != nil && ctx.Err() == nil {
			s.log.Warn("control: audit", "err", err)
		}
		return
	default:
		writeReply(c, Reply{Error: fmt.Sprintf("unknown command %q (want status, pause, resume or audit)", req.Cmd)})
		return
	}
	st := s.d.Status()
	writeReply(c, Reply{Status: &st})
}

func writeReply(w io.Writer, r Reply) {
	b, _ := json.Marshal(r)
	w.Write(append(b, '\n'))
}

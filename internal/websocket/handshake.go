package websocket

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// acceptGUID is RFC 6455's key suffix.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// acceptKey is Sec-WebSocket-Accept for a Sec-WebSocket-Key.
func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + acceptGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// IsUpgrade reports whether r asks for a WebSocket.
func IsUpgrade(r *http.Request) bool {
	return headerHas(r.Header, "Connection", "upgrade") && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// headerHas reports whether a comma-separated header holds token.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// HandshakeError is a request that is not a valid WebSocket opening
// handshake; Accept has answered it with Status.
type HandshakeError struct {
	Status int
	Msg    string
}

func (e *HandshakeError) Error() string { return "websocket: " + e.Msg }

// Accept completes the server side of the opening handshake on w and
// returns the connection; w must not be used afterwards. A request that is
// no valid handshake gets an error status (426 or 400) and a
// *HandshakeError. The caller checks the origin and authorization first.
func Accept(w http.ResponseWriter, r *http.Request) (*Conn, error) {
	return accept(w, r, 32<<10, false)
}

// streamReadBuf is the read buffer of a ServerStream's connection: frame
// headers are parsed in it, and a payload is read through it only when
// the reader asks for less than this; TLS underneath keeps the record
// being read anyway. The HTTP server's 4 KiB buffer, kept for the life of
// each of 10,000 agents' connections, was a tenth of their live heap.
const streamReadBuf = 512

// AcceptStream is Accept for a connection that will be a ServerStream's:
// it reads through a small buffer of its own (streamReadBuf) and agrees
// to a client's UnmaskedHeader.
func AcceptStream(w http.ResponseWriter, r *http.Request) (*Conn, error) {
	return accept(w, r, streamReadBuf, r.Header.Get(UnmaskedHeader) == "1")
}

// accept is Accept, reading through a buffer of about readBuf bytes;
// with unmasked, the client may send its frames unmasked (UnmaskedHeader).
func accept(w http.ResponseWriter, r *http.Request, readBuf int, unmasked bool) (*Conn, error) {
	key := r.Header.Get("Sec-WebSocket-Key")
	switch {
	case r.Method != http.MethodGet:
		return nil, refuse(w, http.StatusMethodNotAllowed, "the handshake is a GET")
	case !IsUpgrade(r):
		return nil, refuse(w, http.StatusUpgradeRequired, "Upgrade: websocket required")
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		w.Header().Set("Sec-WebSocket-Version", "13")
		return nil, refuse(w, http.StatusUpgradeRequired, "Sec-WebSocket-Version 13 required")
	}
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 16 {
		return nil, refuse(w, http.StatusBadRequest, "bad Sec-WebSocket-Key")
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("websocket: take over the connection: %w", err)
	}
	_ = conn.SetDeadline(timeZero)
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + acceptKey(key) + "\r\n"
	if unmasked {
		resp += UnmaskedHeader + ": 1\r\n"
	}
	resp += "\r\n"
	if _, err := conn.Write([]byte(resp)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("websocket: handshake: %w", err)
	}
	var br *bufio.Reader
	// The HTTP server's buffer is kept when it holds bytes already or is
	// about the size asked for; otherwise it is dropped for one that is.
	if brw != nil && (brw.Reader.Buffered() > 0 || brw.Reader.Size() >= readBuf && brw.Reader.Size() <= 2*readBuf) {
		br = brw.Reader
	} else {
		br = bufio.NewReaderSize(conn, readBuf)
	}
	c := newConn(conn, br, false)
	c.unmaskedOK = unmasked
	return c, nil
}

func refuse(w http.ResponseWriter, status int, msg string) error {
	http.Error(w, msg, status)
	return &HandshakeError{Status: status, Msg: msg}
}

// ErrNotUpgraded is the cause of Dial's error when the server answered the
// handshake with something else than 101; the response is returned too,
// with up to 64 KiB of its body readable.
var ErrNotUpgraded = errors.New("websocket: server did not switch protocols")

// Dial opens a WebSocket at url (http, https, ws or wss) through hc (nil:
// http.DefaultClient), so its proxy and TLS settings apply; header is sent
// with the handshake (Authorization, say). ctx bounds the handshake only.
// When the server refuses, the error wraps ErrNotUpgraded and the response
// is returned, its body still readable.
func Dial(ctx context.Context, hc *http.Client, url string, header http.Header) (*Conn, *http.Response, error) {
	switch {
	case strings.HasPrefix(url, "ws://"):
		url = "http://" + url[len("ws://"):]
	case strings.HasPrefix(url, "wss://"):
		url = "https://" + url[len("wss://"):]
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	// The upgraded connection must outlive ctx: it only bounds the
	// handshake, through stop.
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	setUpgrade(req.Header, header, key)
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, 64<<10), cancelCloser{resp.Body, cancel}}
		return nil, resp, fmt.Errorf("%w: %s", ErrNotUpgraded, resp.Status)
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok || !upgradedTo(resp, key) {
		resp.Body.Close()
		cancel()
		return nil, resp, fmt.Errorf("websocket: bad handshake response")
	}
	if !stop() { // ctx ended as the handshake completed
		rwc.Close()
		return nil, resp, ctx.Err()
	}
	c := newConn(cancelRWC{rwc, cancel}, nil, true)
	return c, resp, nil
}

// newKey is a client's Sec-WebSocket-Key: 16 random bytes, base64.
func newKey() (string, error) {
	var k [16]byte
	if _, err := rand.Read(k[:]); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(k[:]), nil
}

// setUpgrade puts the caller's header and a client's upgrade headers for
// key into h.
func setUpgrade(h, header http.Header, key string) {
	for k, v := range header {
		h[k] = v
	}
	h.Set("Connection", "Upgrade")
	h.Set("Upgrade", "websocket")
	h.Set("Sec-WebSocket-Version", "13")
	h.Set("Sec-WebSocket-Key", key)
}

// upgradedTo reports whether resp is the server's switch to WebSocket
// for the client's key.
func upgradedTo(resp *http.Response, key string) bool {
	return resp.StatusCode == http.StatusSwitchingProtocols && strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") &&
		resp.Header.Get("Sec-WebSocket-Accept") == acceptKey(key)
}

// cancelCloser cancels the handshake's context when its body is closed.
type cancelCloser struct {
	io.Closer
	cancel context.CancelFunc
}

func (c cancelCloser) Close() error { err := c.Closer.Close(); c.cancel(); return err }

// cancelRWC is the upgraded connection; Close releases the handshake's
// context too.
type cancelRWC struct {
	io.ReadWriteCloser
	cancel context.CancelFunc
}

func (c cancelRWC) Close() error { err := c.ReadWriteCloser.Close(); c.cancel(); return err }

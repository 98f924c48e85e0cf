package proxy

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Bounds of a proxy's answer to CONNECT, which is read before anything
// else and comes from the network.
const (
	maxResponseHeader = 16 << 10 // status line and headers together
	maxLine           = 4 << 10  // one line (the bufio.Reader's size)
	maxStatusShown    = 128      // bytes of the status line put in an error
)

// RefusedError is a proxy's refusal of a CONNECT: any answer but 2xx.
type RefusedError struct {
	Proxy      string // the proxy's URL, password redacted
	Target     string // host:port
	StatusCode int    // e.g. 403
	Status     string // the status line without the version, e.g. "403 Forbidden"
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("proxy %s refused CONNECT to %s: %s", e.Proxy, e.Target, e.Status)
	if e.StatusCode == 407 {
		msg += " (put the proxy's credentials in its URL: http://user:password@host:port)"
	}
	return msg
}

// errMalformed is a CONNECT answer that is not HTTP/1.x.
var errMalformed = errors.New("malformed answer to CONNECT")

// connectRequest is the CONNECT request for target (host:port) through
// proxyURL, with basic proxy authorization from the URL's user info.
func connectRequest(proxyURL *url.URL, target string) ([]byte, error) {
	if err := checkTarget(target); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n")
	if u := proxyURL.User; u != nil {
		pw, _ := u.Password()
		cred := u.Username() + ":" + pw
		if strings.ContainsAny(cred, "\r\n") {
			return nil, errors.New("proxy credentials contain a line break")
		}
		b.WriteString("Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(cred)) + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes(), nil
}

// checkTarget accepts host:port with a port in 1-65535 and no byte that
// could end the request line or a header.
func checkTarget(target string) error {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return fmt.Errorf("bad address %q: %w", target, err)
	}
	if host == "" {
		return fmt.Errorf("bad address %q: no host", target)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("bad address %q: port", target)
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c >= 0x7f || c == '/' || c == '@' {
			return fmt.Errorf("bad address %q: character %q", target, c)
		}
	}
	return nil
}

// readConnectResponse reads a proxy's answer to CONNECT: the status line and
// the headers, up to and including the empty line that ends them, and not a
// byte further (a 2xx answer has no body: what follows is the tunnel's). It
// returns the status code and the status line without the version. A
// malformed or oversized answer is an error wrapping errMalformed.
func readConnectResponse(br *bufio.Reader) (code int, status string, err error) {
	total := 0
	readLine := func() ([]byte, error) {
		line, err := br.ReadSlice('\n')
		total += len(line)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return nil, fmt.Errorf("%w: line over %d bytes", errMalformed, br.Size())
		case err != nil:
			return nil, err
		case total > maxResponseHeader:
			return nil, fmt.Errorf("%w: header over %d bytes", errMalformed, maxResponseHeader)
		}
		line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
		return line, nil
	}
	first, err := readLine()
	if err != nil {
		return 0, "", err
	}
	code, status, err = parseStatusLine(first)
	if err != nil {
		return 0, "", err
	}
	for {
		line, err := readLine()
		if err != nil {
			return 0, "", err
		}
		if len(line) == 0 {
			return code, status, nil
		}
	}
}

// parseStatusLine parses "HTTP/1.x NNN[ reason]" and returns the code and
// "NNN reason", made printable and bounded for error messages.
func parseStatusLine(line []byte) (int, string, error) {
	s := string(line)
	if len(s) < len("HTTP/1.x 200") || !strings.HasPrefix(s, "HTTP/1.") || s[7] < '0' || s[7] > '9' || s[8] != ' ' {
		return 0, "", fmt.Errorf("%w: status line %s", errMalformed, printable(s))
	}
	rest := s[9:]
	if len(rest) > 3 && rest[3] != ' ' {
		return 0, "", fmt.Errorf("%w: status line %s", errMalformed, printable(s))
	}
	code := 0
	for i := 0; i < 3; i++ {
		c := rest[i]
		if c < '0' || c > '9' {
			return 0, "", fmt.Errorf("%w: status line %s", errMalformed, printable(s))
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return 0, "", fmt.Errorf("%w: status line %s", errMalformed, printable(s))
	}
	return code, printableRaw(strings.TrimSpace(rest)), nil
}

// printable quotes s for an error message, bounded.
func printable(s string) string { return strconv.Quote(printableRaw(s)) }

// printableRaw keeps s's printable ASCII, replaces the rest with '?' and
// bounds it, so a proxy cannot put escape sequences into our logs.
func printableRaw(s string) string {
	if len(s) > maxStatusShown {
		s = s[:maxStatusShown] + "..."
	}
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

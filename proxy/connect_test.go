package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
)

// connectResponses are proxies' answers to CONNECT, with what follows them
// on the connection (the tunnel's first bytes).
var connectResponses = []struct {
	name       string
	in         string
	wantCode   int
	wantStatus string
	wantErr    bool // errMalformed, or the input ends early
	wantRest   string
}{
	{name: "tinyproxy", in: "HTTP/1.0 200 Connection established\r\nProxy-agent: tinyproxy/1.11.1\r\n\r\n", wantCode: 200, wantStatus: "200 Connection established"},
	{name: "no headers", in: "HTTP/1.1 200 OK\r\n\r\n", wantCode: 200, wantStatus: "200 OK"},
	{name: "no reason", in: "HTTP/1.1 200\r\n\r\n", wantCode: 200, wantStatus: "200"},
	{name: "bare newlines", in: "HTTP/1.1 200 OK\nX: y\n\n", wantCode: 200, wantStatus: "200 OK"},
	{name: "server speaks first", in: "HTTP/1.1 200 OK\r\n\r\nINFO {\"server_id\":\"x\"}\r\n", wantCode: 200, wantStatus: "200 OK", wantRest: "INFO {\"server_id\":\"x\"}\r\n"},
	{name: "refused with body", in: "HTTP/1.1 403 Forbidden\r\nContent-Length: 5\r\n\r\nnope!", wantCode: 403, wantStatus: "403 Forbidden", wantRest: "nope!"},
	{name: "auth wanted", in: "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\n\r\n", wantCode: 407, wantStatus: "407 Proxy Authentication Required"},
	{name: "escape in reason", in: "HTTP/1.1 502 Bad\x1b[31m Gateway\r\n\r\n", wantCode: 502, wantStatus: "502 Bad?[31m Gateway"},
	{name: "empty", in: "", wantErr: true},
	{name: "cut in the status line", in: "HTTP/1.1 200 OK", wantErr: true},
	{name: "cut in the headers", in: "HTTP/1.1 200 OK\r\nX: y\r\n", wantErr: true},
	{name: "not http", in: "SSH-2.0-OpenSSH_9.2\r\n\r\n", wantErr: true},
	{name: "http/2", in: "HTTP/2 200\r\n\r\n", wantErr: true},
	{name: "short code", in: "HTTP/1.1 20 OK\r\n\r\n", wantErr: true},
	{name: "long code", in: "HTTP/1.1 2000 OK\r\n\r\n", wantErr: true},
	{name: "code under 100", in: "HTTP/1.1 099 Odd\r\n\r\n", wantErr: true},
	{name: "letters in code", in: "HTTP/1.1 2x0 OK\r\n\r\n", wantErr: true},
	{name: "long line", in: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxLine) + "\r\n\r\n", wantErr: true},
	{name: "endless headers", in: "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: "+strings.Repeat("a", 1000)+"\r\n", 20) + "\r\n", wantErr: true},
}

func TestReadConnectResponse(t *testing.T) {
	for _, tc := range connectResponses {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.in), maxLine)
			code, status, err := readConnectResponse(br)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %d %q, want an error", code, status)
				}
				if !errors.Is(err, errMalformed) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("got error %v, want errMalformed or EOF", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if code != tc.wantCode || status != tc.wantStatus {
				t.Errorf("got %d %q, want %d %q", code, status, tc.wantCode, tc.wantStatus)
			}
			rest, _ := io.ReadAll(br)
			if string(rest) != tc.wantRest {
				t.Errorf("left %q on the connection, want %q", rest, tc.wantRest)
			}
		})
	}
}

// FuzzReadConnectResponse feeds arbitrary answers to the parser: it never
// panics, never reads past the end of the header it accepted, accepts only
// a 3-digit code, and puts only printable, bounded text in the status.
func FuzzReadConnectResponse(f *testing.F) {
	for _, tc := range connectResponses {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(in), maxLine)
		code, status, err := readConnectResponse(br)
		if err != nil {
			return
		}
		if code < 100 || code > 999 {
			t.Fatalf("code %d", code)
		}
		if len(status) > maxStatusShown+3 {
			t.Fatalf("status of %d bytes", len(status))
		}
		for _, c := range []byte(status) {
			if c < ' ' || c >= 0x7f {
				t.Fatalf("status %q has an unprintable byte", status)
			}
		}
		rest, _ := io.ReadAll(br)
		consumed := in[:len(in)-len(rest)]
		if !bytes.Equal(in[len(consumed):], rest) {
			t.Fatalf("rest %q is not the input's tail", rest)
		}
		if !bytes.HasSuffix(consumed, []byte("\n\n")) && !bytes.HasSuffix(consumed, []byte("\n\r\n")) {
			t.Fatalf("accepted %q, which does not end with an empty line", consumed)
		}
		if bytes.Count(consumed[:len(consumed)-1], []byte("\n\n"))+bytes.Count(consumed[:len(consumed)-1], []byte("\n\r\n")) != 0 {
			t.Fatalf("read past the end of the header: %q", consumed)
		}
		if len(consumed) > maxResponseHeader {
			t.Fatalf("accepted a header of %d bytes", len(consumed))
		}
	})
}

func TestConnectRequest(t *testing.T) {
	for _, tc := range []struct {
		name, proxy, target string
		want                string
		wantErr             bool
	}{
		{name: "plain", proxy: "http://p:3128", target: "cp.example.com:443",
			want: "CONNECT cp.example.com:443 HTTP/1.1\r\nHost: cp.example.com:443\r\n\r\n"},
		{name: "auth", proxy: "http://al%40ice:s3cr%3At@p:3128", target: "cp.example.com:443",
			want: "CONNECT cp.example.com:443 HTTP/1.1\r\nHost: cp.example.com:443\r\nProxy-Authorization: Basic YWxAaWNlOnMzY3I6dA==\r\n\r\n"},
		{name: "user only", proxy: "http://bob@p:3128", target: "h:1",
			want: "CONNECT h:1 HTTP/1.1\r\nHost: h:1\r\nProxy-Authorization: Basic Ym9iOg==\r\n\r\n"},
		{name: "ipv6", proxy: "http://p", target: "[::1]:4222",
			want: "CONNECT [::1]:4222 HTTP/1.1\r\nHost: [::1]:4222\r\n\r\n"},
		{name: "no port", proxy: "http://p", target: "h", wantErr: true},
		{name: "port 0", proxy: "http://p", target: "h:0", wantErr: true},
		{name: "port too big", proxy: "http://p", target: "h:65536", wantErr: true},
		{name: "header injection", proxy: "http://p", target: "h\r\nX-Evil: 1\r\n:443", wantErr: true},
		{name: "space", proxy: "http://p", target: "h x:443", wantErr: true},
		{name: "no host", proxy: "http://p", target: ":443", wantErr: true},
		{name: "line break in password", proxy: "http://u:a%0Db@p", target: "h:1", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.proxy)
			if err != nil {
				t.Fatal(err)
			}
			got, err := connectRequest(u, tc.target)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestRefusedErrorMessage(t *testing.T) {
	err := error(&RefusedError{Proxy: "http://p:3128", Target: "cp.example.com:443", StatusCode: 403, Status: "403 Forbidden"})
	if got, want := err.Error(), "proxy http://p:3128 refused CONNECT to cp.example.com:443: 403 Forbidden"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	err = &RefusedError{Proxy: "http://p:3128", Target: "h:443", StatusCode: 407, Status: "407 Proxy Authentication Required"}
	if got := err.Error(); !strings.Contains(got, "user:password") {
		t.Errorf("a 407 does not say how to give credentials: %q", got)
	}
}

// Package console serves Outpost's web console: a browser client of the
// public HTTP API (API.md "Console"), embedded in the binary so that
// serving it needs nothing but the control plane.
//
// The console is static files. Everything it shows it fetches from the API
// with the bearer token the user typed in, which it keeps in the tab's
// sessionStorage: there is no cookie, so no request is ever authorized by
// ambient credentials (CSRF has nothing to ride on), and a previewed app
// on the same host cannot read the token. Every page is served with a
// strict Content-Security-Policy: scripts only from this origin, no inline
// script, connections only to this origin (https/wss or http/ws), no
// framing.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed assets
var embedded embed.FS

// Prefix is where the console's static files are served.
const Prefix = "/console/"

// DevicePath is the device-login approval page, the verificationUri that
// POST /v1/device/code hands out (the user code may follow as ?code=).
const DevicePath = "/device"

// nonceMarker in index.html is replaced with each response's style nonce.
const nonceMarker = "__STYLE_NONCE__"

// Register adds the console's routes to mux: GET / (the app), GET /device
// (the same app, opened at device approval) and GET /console/... (its
// files). Other routes of mux are untouched: "/{$}" matches only the root.
func Register(mux *http.ServeMux) {
	h := handler()
	mux.HandleFunc("GET /{$}", h.serveIndex)
	mux.HandleFunc("GET "+DevicePath, h.serveIndex)
	mux.HandleFunc("GET "+Prefix+"{file...}", h.serveAsset)
}

// asset is one embedded file, with its gzip form when that is smaller.
type asset struct {
	body, gz    []byte
	contentType string
	etag        string
}

type files struct {
	index  []byte
	assets map[string]*asset // by path under assets/
}

var (
	loadOnce sync.Once
	loaded   *files
)

// handler loads (once) and returns the embedded files.
func handler() *files {
	loadOnce.Do(func() {
		f := &files{assets: map[string]*asset{}}
		sub, err := fs.Sub(embedded, "assets")
		if err != nil {
			panic(err) // the embed pattern guarantees the directory
		}
		err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(sub, p)
			if err != nil {
				return err
			}
			if p == "index.html" {
				f.index = b
				return nil
			}
			f.assets[p] = newAsset(p, b)
			return nil
		})
		if err != nil {
			panic(err) // embedded files always read
		}
		loaded = f
	})
	return loaded
}

func newAsset(p string, b []byte) *asset {
	sum := sha256.Sum256(b)
	a := &asset{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	a.contentType = mime.TypeByExtension(path.Ext(p))
	switch path.Ext(p) {
	case ".mjs", ".js":
		a.contentType = "text/javascript; charset=utf-8"
	case ".map":
		a.contentType = "application/json"
	}
	if a.contentType == "" {
		a.contentType = "application/octet-stream"
	}
	a.gz = gzipped(b)
	return a
}

// gzipped is b compressed, or nil when that does not make it smaller.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	if buf.Len() >= len(b) {
		return nil
	}
	return buf.Bytes()
}

// securityHeaders are sent with every console response. The policy is
// per response because of its style nonce.
func securityHeaders(h http.Header, nonce string) {
	style := "style-src 'self'"
	if nonce != "" {
		// xterm.js makes <style> elements for its theme and cell size;
		// the console's script gives them this response's nonce. No
		// style attribute and no other inline style is allowed.
		style += " 'nonce-" + nonce + "'"
	}
	h.Set("Content-Security-Policy", strings.Join([]string{
		"default-src 'self'",
		"script-src 'self'",
		style,
		"img-src 'self' data: blob:",
		"font-src 'self'",
		// 'self' covers ws:/wss: to this host in CSP3 browsers; listed
		// for the others.
		"connect-src 'self' ws: wss:",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
	}, "; "))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
}

// serveIndex serves the app's page with a fresh style nonce.
func (f *files) serveIndex(w http.ResponseWriter, r *http.Request) {
	var n [18]byte
	_, _ = rand.Read(n[:])
	nonce := base64.RawURLEncoding.EncodeToString(n[:])
	h := w.Header()
	securityHeaders(h, nonce)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	body := bytes.ReplaceAll(f.index, []byte(nonceMarker), []byte(nonce))
	writeBody(w, r, body, nil)
}

// serveAsset serves one embedded file, gzipped when the client takes it.
func (f *files) serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := f.assets[r.PathValue("file")]
	h := w.Header()
	securityHeaders(h, "")
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && match == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, r, a.body, a.gz)
}

// writeBody writes body, or gz (its gzip form) when the client accepts it.
func writeBody(w http.ResponseWriter, r *http.Request, body, gz []byte) {
	if gz == nil && len(body) > 1024 {
		gz = gzipped(body)
	}
	if gz != nil && acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		body = gz
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) != "gzip" {
			continue
		}
		q, isQ := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if w, err := strconv.ParseFloat(q, 64); isQ && err == nil && w == 0 {
			return false // refused explicitly
		}
		return true
	}
	return false
}

package controlplane

import (
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/agent/update"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Agent releases (self-update): the control plane serves what an operator
// put in Config.AgentReleases, signed elsewhere (outpost release publish);
// it holds no release key and checks no signature: agents do.
const (
	releaseManifest  = "manifest.json"
	releaseSignature = "manifest.json.sig"
	maxManifest      = 1 << 20
)

var errNoReleases = wire.Errorf(wire.CodeNotFound, "", "this control plane serves no agent releases (serve --agent-releases DIR)")

// handleLatestRelease answers GET /v1/agent-releases/latest?workspace=: the
// signed manifest, or updates false when the workspace turned them off.
func (s *Server) handleLatestRelease(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.AgentReleases == "" {
		return errNoReleases
	}
	if ws := r.URL.Query().Get("workspace"); ws != "" && subjects.ValidateID(ws) == nil {
		var rec workspaceRecord
		_, err := kvjson.Get(r.Context(), s.st.workspaces, ws, &rec)
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		if err == nil && rec.NoAgentUpdates {
			writeJSON(w, http.StatusOK, update.Latest{Updates: false, OldestProtocol: wire.OldestVersion})
			return nil
		}
	}
	root, err := os.OpenRoot(s.cfg.AgentReleases)
	if err != nil {
		return errNoReleases
	}
	defer root.Close()
	manifest, err := readSmall(root, releaseManifest)
	if err != nil {
		return err
	}
	sig, err := readSmall(root, releaseSignature)
	if err != nil {
		return err
	}
	out := update.Latest{Updates: true, OldestProtocol: wire.OldestVersion, Manifest: base64.StdEncoding.EncodeToString(manifest), Signature: strings.TrimSpace(string(sig))}
	if m, err := update.ParseManifest(manifest); err == nil {
		out.Version = m.Version
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func readSmall(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, wire.Errorf(wire.CodeNotFound, "", "the agent releases directory has no %s", name)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxManifest {
		return nil, wire.Errorf(wire.CodePayloadTooLarge, "", "%s is over %d bytes", name, maxManifest)
	}
	return b, nil
}

// handleReleaseFile serves one file of the releases directory, confined
// to it.
func (s *Server) handleReleaseFile(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.AgentReleases == "" {
		return errNoReleases
	}
	name := r.PathValue("name")
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return wire.Errorf(wire.CodeInvalidArgument, "", "bad release file name %q", name)
	}
	root, err := os.OpenRoot(s.cfg.AgentReleases)
	if err != nil {
		return errNoReleases
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return wire.Errorf(wire.CodeNotFound, "", "no release file %q", name)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return wire.Errorf(wire.CodeNotFound, "", "no release file %q", name)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, name, fi.ModTime(), f)
	return nil
}

// handlePatchWorkspace changes a workspace's settings.
func (s *Server) handlePatchWorkspace(w http.ResponseWriter, r *http.Request) error {
	var p client.WorkspacePatch
	if err := decodeJSON(w, r, maxJSONBody, &p); err != nil {
		return err
	}
	ws := r.PathValue("ws")
	for attempt := 0; ; attempt++ {
		var rec workspaceRecord
		rev, err := kvjson.Get(r.Context(), s.st.workspaces, ws, &rec)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return workspaceNotFound(ws)
		}
		if err != nil {
			return err
		}
		if p.AgentUpdates != nil {
			rec.NoAgentUpdates = !*p.AgentUpdates
		}
		_, err = kvjson.Update(r.Context(), s.st.workspaces, ws, &rec, rev)
		if isRevisionMismatch(err) && attempt < 5 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, rec.api())
		return nil
	}
}

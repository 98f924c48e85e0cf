package update

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Control-plane paths of agent releases.
const (
	LatestPath = "/v1/agent-releases/latest"
	FilesPath  = "/v1/agent-releases/files/"
)

// Defaults of Checker.
const (
	DefaultCheckEvery = time.Hour
	// busyRecheck is how often a deferred update looks again whether the
	// agent is idle.
	busyRecheck = time.Second
	maxLatest   = 1 << 20
)

// Checker looks for a newer release and stages it.
type Checker struct {
	BaseURL   string       // the control plane's URL, from the agent's config
	Workspace string       // the agent's workspace, whose setting may turn updates off
	HTTP      *http.Client // trusts the pinned CA only; through the proxy
	PublicKey ed25519.PublicKey
	Version   string // this build's
	Platform  string // "os/arch"
	// Every is the time between checks (DefaultCheckEvery), with up to a
	// tenth of jitter.
	Every time.Duration
	// Busy reports live work a restart would cut; the update waits for it
	// to end unless the release is forced.
	Busy func() (bool, string)
	// Dir is where the download is staged: the executable's directory, so
	// that the replacement is a rename.
	Dir string
	// Skip reports a version that failed before (rolled back): not tried
	// again.
	Skip func(version string) bool
	Log  *slog.Logger
}

// errNoReleases: the control plane serves none (404 on LatestPath).
var errNoReleases = errors.New("update: the control plane serves no agent releases")

// Staged is a verified binary ready to replace the running one.
type Staged struct {
	Version string
	Path    string
}

// Run checks at once and then every c.Every until it has staged a newer
// release and the agent is idle (or the release is forced); it returns
// that, or ctx's error. A refused release (bad signature, bad hash) is
// logged and not applied.
func (c *Checker) Run(ctx context.Context) (*Staged, error) {
	every := c.Every
	if every <= 0 {
		every = DefaultCheckEvery
	}
	for {
		st, force, err := c.check(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			c.Log.Warn("update check failed; the running version stays", "err", err)
		case st != nil:
			if err := c.waitIdle(ctx, force); err != nil {
				os.Remove(st.Path)
				return nil, err
			}
			return st, nil
		}
		jitter := time.Duration(rand.Int64N(int64(every)/10 + 1))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(every + jitter):
		}
	}
}

// waitIdle waits until nothing is live, logging why it defers.
func (c *Checker) waitIdle(ctx context.Context, force bool) error {
	logged := ""
	for !force && c.Busy != nil {
		busy, what := c.Busy()
		if !busy {
			return nil
		}
		if what != logged {
			c.Log.Info("update deferred until live work ends", "live", what)
			logged = what
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(busyRecheck):
		}
	}
	return nil
}

// check asks for the latest release; a newer one for this platform is
// downloaded, verified and staged.
func (c *Checker) check(ctx context.Context) (*Staged, bool, error) {
	var l Latest
	err := c.getJSON(ctx, LatestPath+"?workspace="+url.QueryEscape(c.Workspace), &l)
	if errors.Is(err, errNoReleases) {
		c.Log.Debug("the control plane serves no agent releases")
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if l.OldestProtocol > wire.Version {
		c.Log.Error("the control plane no longer serves this agent's protocol: update the agent", "protocol", wire.Version, "oldestServed", l.OldestProtocol)
	}
	if !l.Updates {
		return nil, false, nil
	}
	m, err := l.Verify(c.PublicKey)
	if err != nil {
		return nil, false, err
	}
	if !Newer(m.Version, c.Version) || c.Skip != nil && c.Skip(m.Version) {
		return nil, false, nil
	}
	f, ok := m.Files[c.Platform]
	if !ok {
		return nil, false, fmt.Errorf("update: release %s has no binary for %s", m.Version, c.Platform)
	}
	c.Log.Info("downloading update", "version", m.Version, "from", c.Version)
	path, err := c.download(ctx, f)
	if err != nil {
		return nil, false, fmt.Errorf("update to %s refused: %w", m.Version, err)
	}
	return &Staged{Version: m.Version, Path: path}, m.Force, nil
}

func (c *Checker) getJSON(ctx context.Context, path string, v any) error {
	res, err := c.get(ctx, path)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	return json.NewDecoder(io.LimitReader(res.Body, maxLatest)).Decode(v)
}

func (c *Checker) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return nil, err
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("update: GET %s: %w", path, err)
	}
	if res.StatusCode == http.StatusNotFound && strings.HasPrefix(path, LatestPath) {
		res.Body.Close()
		return nil, errNoReleases
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, fmt.Errorf("update: GET %s: HTTP %d", path, res.StatusCode)
	}
	return res, nil
}

// download writes f to a new file in c.Dir, hashing it on the way, and
// keeps it only when the hash and size match the signed manifest.
func (c *Checker) download(ctx context.Context, f File) (string, error) {
	res, err := c.get(ctx, FilesPath+url.PathEscape(f.Name))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	tmp, err := os.CreateTemp(c.Dir, ".outpost-update-*")
	if err != nil {
		return "", fmt.Errorf("update: stage in %s: %w", c.Dir, err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(res.Body, f.Size+1))
	if err != nil {
		return "", fmt.Errorf("update: download %s: %w", f.Name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 || n != f.Size {
		return "", fmt.Errorf("%w (%s: got %s, %d bytes; want %s, %d bytes)", ErrBadHash, f.Name, got, n, f.SHA256, f.Size)
	}
	if err := tmp.Chmod(0o755); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return "", fmt.Errorf("update: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("update: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("update: %w", err)
	}
	keep = true
	return filepath.Clean(tmp.Name()), nil
}

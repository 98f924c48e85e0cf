package enroll

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// testConfig is a valid Config without a server.
func testConfig(t testing.TB) *Config {
	t.Helper()
	a := newAuthority(t)
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	token, err := a.IssueAgentJWT(testAgent, pub)
	if err != nil {
		t.Fatal(err)
	}
	return &Config{
		URL:       "http://127.0.0.1:8080",
		Workspace: "ws",
		Agent:     "a1",
		Pool:      "cloud",
		NATSURLs:  []string{"nats://127.0.0.1:4222", "nats://127.0.0.1:4223"},
		JWT:       token,
		Seed:      string(seed),
	}
}

func TestConfigRoundTrip(t *testing.T) {
	c := testConfig(t)
	path := filepath.Join(t.TempDir(), "agent.json")
	if err := c.Save(path); err != nil {
		t.Fatalf("Save: %v", err)
	}
	got, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("LoadConfig = %v, want %v", got, c)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"url"`, `"workspace"`, `"agent"`, `"pool"`, `"natsUrls"`, `"jwt"`, `"seed"`} {
		if !strings.Contains(string(data), field) {
			t.Errorf("saved file lacks %s", field)
		}
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the config (no temp files)", len(entries))
	}
}

func TestConfigSaveTightensMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix permission bits only")
	}
	path := filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testConfig(t).Save(path); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

func TestLoadConfigRefusesLooseMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix permission bits only")
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		t.Run(mode.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.json")
			if err := testConfig(t).Save(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(path)
			if !errors.Is(err, ErrInsecureFile) {
				t.Fatalf("LoadConfig error = %v, want ErrInsecureFile", err)
			}
			if !strings.Contains(err.Error(), "chmod 600") {
				t.Errorf("error %q does not say to chmod 600", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	acct, _ := nkeys.CreateAccount()
	acctSeed, _ := acct.Seed()
	tests := []struct {
		name   string
		mutate func(*Config)
	}{
		{"bad workspace", func(c *Config) { c.Workspace = "WS" }},
		{"no agent", func(c *Config) { c.Agent = "" }},
		{"bad pool", func(c *Config) { c.Pool = "a.b" }},
		{"no nats urls", func(c *Config) { c.NATSURLs = nil }},
		{"comma in nats url", func(c *Config) { c.NATSURLs = []string{"nats://a,nats://b"} }},
		{"no jwt", func(c *Config) { c.JWT = "" }},
		{"no seed", func(c *Config) { c.Seed = "" }},
		{"seed of another key", func(c *Config) { c.Seed = string(otherSeed) }},
		{"account seed", func(c *Config) { c.Seed = string(acctSeed) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t)
			tt.mutate(c)
			if err := c.Validate(); err == nil {
				t.Fatal("Validate succeeded, want an error")
			}
			if err := c.Save(filepath.Join(t.TempDir(), "agent.json")); err == nil {
				t.Fatal("Save succeeded, want an error")
			}
		})
	}
}

func TestConfigHidesSecrets(t *testing.T) {
	c := testConfig(t)
	for _, s := range []string{c.String(), c.GoString()} {
		if strings.Contains(s, c.Seed) || strings.Contains(s, c.JWT) {
			t.Fatalf("%q reveals credentials", s)
		}
	}
}

func TestNATSOptionsBadSeed(t *testing.T) {
	c := testConfig(t)
	c.Seed = "not a seed"
	var o nats.Options
	var err error
	for _, opt := range c.NATSOptions() {
		if err = opt(&o); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("options with a bad seed applied without error")
	}
	if strings.Contains(err.Error(), c.Seed) {
		t.Fatalf("error %q repeats the seed", err)
	}
}

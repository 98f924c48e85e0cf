package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/outposthq/outpost/internal/secretfile"
)

// A context is a saved control plane: its URL, a token, a workspace and a
// CA file, as `nats context` and `gh auth` keep theirs. `outpost login`
// saves one and makes it current; client commands use the current one
// when neither --url/--token nor OUTPOST_URL/OUTPOST_TOKEN is given, or
// the one --context or OUTPOST_CONTEXT names.

// savedContext is one context as stored.
type savedContext struct {
	URL       string `json:"url"`
	Token     string `json:"token"`
	Workspace string `json:"workspace,omitempty"`
	CAFile    string `json:"caFile,omitempty"`
}

// contextStore is the file of contexts: contexts.json, mode 0600, in
// outpost's directory under the user's config dir (0700).
type contextStore struct {
	Current  string                  `json:"current,omitempty"`
	Contexts map[string]savedContext `json:"contexts"`
}

// errNoConfigDir is returned (wrapped) when there is nowhere to keep
// contexts: no OUTPOST_CONFIG_DIR and no user config dir (no $HOME).
var errNoConfigDir = errors.New("no config directory for contexts")

// maxContextFile bounds the contexts file read.
const maxContextFile = 1 << 20

// contextNameRE is what a context name may be: a word, usable unquoted in
// a shell.
var contextNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// contextsPath is where the contexts are kept: $OUTPOST_CONFIG_DIR, else
// outpost/ under os.UserConfigDir (~/.config on Linux, ~/Library/Application
// Support on macOS, %AppData% on Windows).
func contextsPath() (string, error) {
	if d := envOr("OUTPOST_CONFIG_DIR", ""); d != "" {
		return filepath.Join(d, "contexts.json"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("%w (set OUTPOST_CONFIG_DIR): %v", errNoConfigDir, err)
	}
	return filepath.Join(d, "outpost", "contexts.json"), nil
}

// loadContexts reads the contexts; a missing file is an empty store.
func loadContexts() (*contextStore, string, error) {
	path, err := contextsPath()
	if err != nil {
		return nil, "", err
	}
	st := &contextStore{Contexts: map[string]savedContext{}}
	data, err := secretfile.Read(path, maxContextFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, path, nil
	case err != nil:
		return nil, path, fmt.Errorf("contexts: %w", err)
	}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, path, fmt.Errorf("contexts: %s: %w", path, err)
	}
	if st.Contexts == nil {
		st.Contexts = map[string]savedContext{}
	}
	return st, path, nil
}

// save writes the contexts to path (0600, its directory 0700).
func (st *contextStore) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), secretfile.DirMode); err != nil {
		return fmt.Errorf("contexts: %w", err)
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return secretfile.WriteAtomic(path, append(data, '\n'))
}

// pick returns the context named name, or the current one for "" (nil
// when there is none).
func (st *contextStore) pick(name string) (*savedContext, error) {
	if name == "" {
		name = st.Current
		if name == "" {
			return nil, nil
		}
	}
	c, ok := st.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("no context %q (see 'outpost context ls'; 'outpost login --name %s' makes it)", name, name)
	}
	return &c, nil
}

// contextCommands are `outpost context ...`.
var contextCommands = []leafCommand{
	{"ls", "list the saved contexts (never their tokens)", runContextList},
	{"use", "make a context the current one", runContextUse},
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0]) {
		args = append([]string{"ls"}, args...)
	}
	return runLeafGroup(ctx, "context", contextCommands, args, stdout, stderr)
}

func runLogin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("login", "--url URL [--token TOKEN] [--name NAME] [--workspace WS] [--ca-file FILE]", stderr)
	url := fs.String("url", "", "control plane URL (default $OUTPOST_URL)")
	token := fs.String("token", "", "admin token or workspace key (default: read from stdin, not echoed on a terminal)")
	name := fs.String("name", "default", "the context's name")
	ws := fs.String("workspace", "", "the context's workspace (default $OUTPOST_WORKSPACE, else default)")
	caFile := fs.String("ca-file", "", "a CA certificate (PEM) to trust for this control plane (default $OUTPOST_CA_FILE)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	c := savedContext{URL: or(*url, envOr("OUTPOST_URL", "")), Token: *token, Workspace: or(*ws, envOr("OUTPOST_WORKSPACE", "default")), CAFile: or(*caFile, envOr("OUTPOST_CA_FILE", ""))}
	if c.URL == "" {
		fs.Usage()
		return fmt.Errorf("--url is required")
	}
	if !contextNameRE.MatchString(*name) {
		return fmt.Errorf("--name %q: want letters, digits, '.', '_' or '-'", *name)
	}
	if c.CAFile != "" {
		abs, err := filepath.Abs(c.CAFile)
		if err != nil {
			return err
		}
		c.CAFile = abs
	}
	st, path, err := loadContexts() // a broken file fails before the prompt
	if err != nil {
		return err
	}
	if c.Token == "" {
		if c.Token, err = readToken(os.Stdin, stderr, c.URL); err != nil {
			return err
		}
	}
	if err := checkLogin(ctx, c); err != nil {
		return err
	}
	st.Contexts[*name] = c
	st.Current = *name
	if err := st.save(path); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "logged in to %s, workspace %s: context %s is current (saved in %s)\n", c.URL, c.Workspace, *name, path)
	return err
}

// loginTimeout bounds login's check of the token.
const loginTimeout = 30 * time.Second

// checkLogin reads the context's workspace with its token: a token that
// does not work there is never saved.
func checkLogin(ctx context.Context, c savedContext) error {
	cl, err := newClient(c.URL, c.Token, c.CAFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	if _, err := cl.GetWorkspace(ctx, c.Workspace); err != nil {
		return fmt.Errorf("checking the token on workspace %s at %s (nothing saved): %w", c.Workspace, c.URL, err)
	}
	return nil
}

// readToken reads a token from stdin: on a terminal after a prompt on
// stderr, without echo; else its first line.
func readToken(stdin *os.File, stderr io.Writer, url string) (string, error) {
	var tok string
	if term.IsTerminal(int(stdin.Fd())) {
		var err error
		if tok, err = readTokenNoEcho(stdin, stderr, "token for "+url+": "); err != nil {
			return "", fmt.Errorf("read token: %w", err)
		}
	} else {
		line, err := bufio.NewReaderSize(stdin, 4096).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read token from stdin: %w", err)
		}
		tok = line
	}
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", fmt.Errorf("no token: pass --token or give it on stdin")
	}
	return tok, nil
}

// readTokenNoEcho reads a line from the terminal stdin with echo off, as
// ssh and sudo do: the terminal is put in raw mode before the prompt is
// written, so that nothing typed after the prompt appears, however early.
// Ctrl-C or Ctrl-D gives up.
func readTokenNoEcho(stdin *os.File, stderr io.Writer, prompt string) (string, error) {
	fd := int(stdin.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return "", err
	}
	defer term.Restore(fd, old)
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{stdin, stderr}, "")
	tok, err := t.ReadPassword(prompt)
	if errors.Is(err, io.EOF) {
		return "", fmt.Errorf("interrupted")
	}
	return tok, err
}

func runLogout(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logout", "[NAME]", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atMost(fs, 1, "one context NAME"); err != nil {
		return err
	}
	st, path, err := loadContexts()
	if err != nil {
		return err
	}
	name := or(fs.Arg(0), or(envOr("OUTPOST_CONTEXT", ""), st.Current))
	if name == "" {
		return fmt.Errorf("no current context: name the one to remove (see 'outpost context ls')")
	}
	if _, ok := st.Contexts[name]; !ok {
		return fmt.Errorf("no context %q (see 'outpost context ls')", name)
	}
	delete(st.Contexts, name)
	if st.Current == name {
		st.Current = ""
	}
	if err := st.save(path); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "context %s removed, its token with it\n", name)
	return err
}

// contextInfo is a context as `context ls --json` prints it: no token.
type contextInfo struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Workspace string `json:"workspace"`
	CAFile    string `json:"caFile,omitempty"`
	Current   bool   `json:"current"`
}

func runContextList(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("context ls", "[--json]", stderr)
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	st, _, err := loadContexts()
	if err != nil {
		return err
	}
	list := []contextInfo{}
	for name, c := range st.Contexts {
		list = append(list, contextInfo{Name: name, URL: c.URL, Workspace: c.Workspace, CAFile: c.CAFile, Current: name == st.Current})
	}
	slices.SortFunc(list, func(a, b contextInfo) int { return strings.Compare(a.Name, b.Name) })
	if *asJSON {
		return printJSON(stdout, struct {
			Contexts []contextInfo `json:"contexts"`
		}{list})
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tURL\tWORKSPACE")
	for _, c := range list {
		mark := " "
		if c.Current {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\n", mark, c.Name, c.URL, c.Workspace)
	}
	return tw.Flush()
}

func runContextUse(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("context use", "NAME", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 1, "a context NAME"); err != nil {
		return err
	}
	st, path, err := loadContexts()
	if err != nil {
		return err
	}
	if _, err := st.pick(fs.Arg(0)); err != nil {
		return err
	}
	st.Current = fs.Arg(0)
	if err := st.save(path); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "context %s is current\n", st.Current)
	return err
}

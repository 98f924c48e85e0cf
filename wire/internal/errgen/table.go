package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
)

// table is wire/reasons.json: every error code and every reason, with its
// HTTP status and its meaning.
type table struct {
	Comment string      `json:"_comment"`
	Codes   []codeRow   `json:"codes"`
	Reasons []reasonRow `json:"reasons"`
}

// codeRow is one error code.
type codeRow struct {
	Code    string `json:"code"`
	Status  int    `json:"status"`
	Meaning string `json:"meaning"`
	// Planned codes are part of the contract but nothing returns them yet:
	// they are documented and get no Go constant.
	Planned bool `json:"planned,omitempty"`
}

// reasonRow is one reason under one code. A reason may refine more than one
// code (executable_not_found is not_found for exec and unsupported for git);
// each pair is a row, and the Go constant is made once.
type reasonRow struct {
	Reason string `json:"reason"`
	Code   string `json:"code"`
	// Status overrides the code's HTTP status for this reason (405, 416).
	Status  int    `json:"status,omitempty"`
	Meaning string `json:"meaning"`
	// Wire reasons appear in the agent protocol: PROTOCOL.md lists them.
	Wire bool `json:"wire,omitempty"`
	// Planned reasons are documented and get no Go constant yet.
	Planned bool `json:"planned,omitempty"`
	// Name is the constant's suffix when it is not the reason in CamelCase.
	Name string `json:"name,omitempty"`
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// load reads and checks the table at path.
func load(path string) (*table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(data)
}

// parse decodes and checks a table: every name snake_case, every code and
// (code, reason) pair once, every reason under a known code, every meaning
// present and fit for one table cell, every status a real one.
func parse(data []byte) (*table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("reasons.json: %w", err)
	}
	codes := map[string]codeRow{}
	for _, c := range t.Codes {
		switch {
		case !snake.MatchString(c.Code):
			return nil, fmt.Errorf("code %q is not snake_case", c.Code)
		case codes[c.Code].Code != "":
			return nil, fmt.Errorf("code %q twice", c.Code)
		case http.StatusText(c.Status) == "" || c.Status < 400:
			return nil, fmt.Errorf("code %q: status %d is not an HTTP error status", c.Code, c.Status)
		}
		if err := checkMeaning("code "+c.Code, c.Meaning); err != nil {
			return nil, err
		}
		codes[c.Code] = c
	}
	pairs := map[[2]string]bool{}
	names := map[string]string{}
	for _, r := range t.Reasons {
		what := fmt.Sprintf("reason %s/%s", r.Code, r.Reason)
		c, ok := codes[r.Code]
		switch {
		case !snake.MatchString(r.Reason):
			return nil, fmt.Errorf("%s: not snake_case", what)
		case !ok:
			return nil, fmt.Errorf("%s: unknown code", what)
		case c.Planned && !r.Planned:
			return nil, fmt.Errorf("%s: its code is planned, so it must be", what)
		case pairs[[2]string{r.Code, r.Reason}]:
			return nil, fmt.Errorf("%s twice", what)
		case r.Status != 0 && (http.StatusText(r.Status) == "" || r.Status < 400):
			return nil, fmt.Errorf("%s: status %d is not an HTTP error status", what, r.Status)
		case r.Status == c.Status:
			return nil, fmt.Errorf("%s: status %d is its code's already; leave it out", what, r.Status)
		case r.Name != "" && r.Name == camel(r.Reason):
			return nil, fmt.Errorf("%s: name %s is the default; leave it out", what, r.Name)
		}
		if err := checkMeaning(what, r.Meaning); err != nil {
			return nil, err
		}
		pairs[[2]string{r.Code, r.Reason}] = true
		// Every row of one reason agrees on its constant and on being planned.
		key := r.Reason
		if r.Planned {
			key += " (planned)"
		}
		if prev, ok := names[r.Reason]; ok && prev != key+"="+r.constName() {
			return nil, fmt.Errorf("%s: its rows disagree on name or planned", what)
		}
		names[r.Reason] = key + "=" + r.constName()
	}
	seen := map[string]string{}
	for _, r := range t.Reasons {
		if other, ok := seen[r.constName()]; ok && other != r.Reason {
			return nil, fmt.Errorf("reasons %s and %s both make %s", other, r.Reason, r.constName())
		}
		seen[r.constName()] = r.Reason
	}
	return &t, nil
}

// checkMeaning refuses a meaning that is empty or would break a Markdown
// table row.
func checkMeaning(what, m string) error {
	switch {
	case strings.TrimSpace(m) == "":
		return fmt.Errorf("%s has no meaning", what)
	case strings.ContainsAny(m, "|\n"):
		return fmt.Errorf("%s: its meaning holds | or a newline", what)
	}
	return nil
}

// code returns the row of code c.
func (t *table) code(c string) codeRow {
	for _, r := range t.Codes {
		if r.Code == c {
			return r
		}
	}
	return codeRow{}
}

// status is the HTTP status of r: its own, else its code's.
func (t *table) status(r reasonRow) int {
	if r.Status != 0 {
		return r.Status
	}
	return t.code(r.Code).Status
}

// constName is the Go constant of r.
func (r reasonRow) constName() string {
	if r.Name != "" {
		return "Reason" + r.Name
	}
	return "Reason" + camel(r.Reason)
}

// initialisms are the words Go spells in capitals.
var initialisms = map[string]bool{"id": true, "tty": true, "nats": true, "http": true, "url": true, "api": true, "json": true}

// camel turns snake_case into CamelCase, initialisms in capitals.
func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if initialisms[w] {
			b.WriteString(strings.ToUpper(w))
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

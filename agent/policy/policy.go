// Package policy is the machine owner's policy file: what the agent on their
// machine may do, whatever the control plane asks. The file is JSON (API.md,
// "The owner's control of their machine"); absent fields mean allowed, and
// nothing the control plane sends can loosen it.
//
// Parse reads and validates a policy; a Policy answers the questions the
// agent's dispatch asks (Op, Command, Path, Hidden, AllowPort) with nil or a
// *Denial naming the rule. File loads a policy from disk, refusing a file
// that others may write, and reloads it on SIGHUP or when it changes.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"strings"
)

// Access is how far the agent may use an area (fs, git).
type Access string

// The three levels of Access; empty means ReadWrite.
const (
	ReadWrite Access = "read-write"
	ReadOnly  Access = "read-only"
	None      Access = "none"
)

// Limits bound each process the agent starts (and its children). Zero is no limit.
type Limits struct {
	// MemoryBytes bounds the memory of the process (its cgroup, or its
	// address space under rlimits).
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	// CPUPercent bounds its CPU time, 100 being one core (cgroups only).
	CPUPercent int `json:"cpuPercent,omitempty"`
	// Processes bounds the processes and threads alive in it at once.
	Processes int `json:"processes,omitempty"`
}

// LimitsOrZero is p's limits; none for a nil Policy.
func (p *Policy) LimitsOrZero() Limits {
	if p == nil {
		return Limits{}
	}
	return p.Limits
}

// DenyPathsOrNil is p's denyPaths; none for a nil Policy.
func (p *Policy) DenyPathsOrNil() []string {
	if p == nil {
		return nil
	}
	return p.DenyPaths
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// Policy is one parsed, valid policy file. The zero value allows everything.
// A Policy is never changed once parsed; File swaps whole policies.
type Policy struct {
	// Exec, Processes and TTY switch buffered exec, long-running processes
	// (proc.*) and terminals; nil means allowed.
	Exec      *bool `json:"exec,omitempty"`
	Processes *bool `json:"processes,omitempty"`
	TTY       *bool `json:"tty,omitempty"`
	// FS and Git are the access to files and to git; empty is read-write.
	FS  Access `json:"fs,omitempty"`
	Git Access `json:"git,omitempty"`
	// Commands, when not nil, are the only executables allowed, by base
	// name; shell text ("command") needs "sh" among them.
	Commands []string `json:"commands,omitempty"`
	// DenyPaths are globs of slash paths under the root that no operation
	// may read, write, list, search, watch, archive or give to git. A path
	// is denied when it or one of its parents matches; "**" matches any
	// number of path elements, "*" and "?" stay within one.
	DenyPaths []string `json:"denyPaths,omitempty"`
	// Ports, when not nil, are the only agent ports the ports feature may reach.
	Ports []int `json:"ports,omitempty"`
	// Limits bound every process the agent starts.
	Limits Limits `json:"limits,omitzero"`

	deny []glob // DenyPaths, compiled
}

// MaxSize bounds a policy file.
const MaxSize = 1 << 20

// foldCase is whether paths are matched without regard to case: the file
// systems of darwin and windows fold case by default, and ".SSH" must not
// get past a rule for ".ssh" there.
var foldCase = runtime.GOOS == "darwin" || runtime.GOOS == "windows"

// Parse decodes and validates a policy. Unknown fields, trailing data and
// values out of range are errors naming the field.
func Parse(data []byte) (*Policy, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("policy: larger than %d bytes", MaxSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("policy: data after the JSON object")
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return &p, nil
}

func (p *Policy) validate() error {
	for name, a := range map[string]Access{"fs": p.FS, "git": p.Git} {
		switch a {
		case "", ReadWrite, ReadOnly, None:
		default:
			return fmt.Errorf("%s: %q is not read-write, read-only or none", name, a)
		}
	}
	for _, c := range p.Commands {
		if c == "" || strings.ContainsAny(c, `/\`+"\x00") || c == "." || c == ".." {
			return fmt.Errorf("commands: %q is not an executable's base name", c)
		}
	}
	p.deny = make([]glob, 0, len(p.DenyPaths))
	for _, d := range p.DenyPaths {
		g, err := compileGlob(d)
		if err != nil {
			return fmt.Errorf("denyPaths: %w", err)
		}
		p.deny = append(p.deny, g)
	}
	for _, port := range p.Ports {
		if port < 1 || port > 65535 {
			return fmt.Errorf("ports: %d is not a port (1 to 65535)", port)
		}
	}
	l := p.Limits
	if l.MemoryBytes < 0 || l.CPUPercent < 0 || l.Processes < 0 {
		return errors.New("limits: values must not be negative")
	}
	return nil
}

// Denial is a call the policy refuses. The agent answers it as 403
// permission_denied reason policy, with Error as the message.
type Denial struct {
	// Rule is the policy field that denies: "exec", "processes", "tty",
	// "fs", "git", "commands", "denyPaths" or "ports".
	Rule string
	// Detail says what was refused.
	Detail string
}

func (d *Denial) Error() string {
	return fmt.Sprintf("the machine owner's policy denies this (rule %q): %s", d.Rule, d.Detail)
}

func deny(rule, format string, args ...any) *Denial {
	return &Denial{Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

// allowed is a switch's value: absent means allowed.
func allowed(b *bool) bool { return b == nil || *b }

// access is a's value with empty meaning read-write.
func access(a Access) Access {
	if a == "" {
		return ReadWrite
	}
	return a
}

// Op checks an operation by its area: "exec"; "proc.*" (processes);
// "fs.*" and "git.*" (reads need read-only, mutations read-write). Ops of no
// area (ping, capabilities) are always allowed. A nil Policy allows all.
func (p *Policy) Op(op string, mutates bool) error {
	if p == nil {
		return nil
	}
	area, _, _ := strings.Cut(op, ".")
	switch area {
	case "exec":
		if !allowed(p.Exec) {
			return deny("exec", "exec is switched off on this machine")
		}
	case "proc":
		if !allowed(p.Processes) {
			return deny("processes", "processes are switched off on this machine")
		}
	case "fs", "git":
		a := access(p.FS)
		if area == "git" {
			a = access(p.Git)
		}
		switch {
		case a == None:
			return deny(area, "%s is %q on this machine", area, None)
		case a == ReadOnly && mutates:
			return deny(area, "%s is %q on this machine; %s changes it", area, ReadOnly, op)
		}
	}
	return nil
}

// WorkTree checks op, a git op that writes the files of a work tree (a
// checkout, a pull's merge, an applied patch, a clone), against the fs
// rule too: those are file writes, which fs "read-only" or "none" denies.
func (p *Policy) WorkTree(op string) error {
	if p == nil {
		return nil
	}
	if a := access(p.FS); a != ReadWrite {
		return deny("fs", "fs is %q on this machine; %s writes files", a, op)
	}
	return nil
}

// ProgramsRestricted names the rule that keeps callers from running
// programs of their choosing: "commands" with an allow-list, "exec" when
// both exec and processes are off; "" when programs run freely. While it
// is set, the agent keeps the API from writing the files through which git
// would run programs (hooks, config).
func (p *Policy) ProgramsRestricted() string {
	switch {
	case p == nil:
		return ""
	case p.Commands != nil:
		return "commands"
	case !allowed(p.Exec) && !allowed(p.Processes):
		return "exec"
	}
	return ""
}

// RestrictedBecause says why writes are refused under rule (from
// ProgramsRestricted), for a Denial's detail.
func RestrictedBecause(rule string) string {
	if rule == "commands" {
		return "commands are restricted on this machine"
	}
	return "exec and processes are switched off on this machine"
}

// Terminal checks a request for a terminal (rule "tty").
func (p *Policy) Terminal() error {
	if p != nil && !allowed(p.TTY) {
		return deny("tty", "terminals are switched off on this machine")
	}
	return nil
}

// Shell is the name shell text needs in Commands.
const Shell = "sh"

// Command checks what a command would start: argv[0] by base name, or
// shell text (which needs Shell). With an allow-list, argv[0] must be a bare
// name looked up in the agent's PATH (a path could name a file written
// through the API under an allowed name), and env may not change how
// executables are found or loaded (PATH, LD_*, DYLD_*).
func (p *Policy) Command(argv []string, shell string, env map[string]string) error {
	if p == nil || p.Commands == nil {
		return nil
	}
	for k := range env {
		u := strings.ToUpper(k)
		if u == "PATH" || strings.HasPrefix(u, "LD_") || strings.HasPrefix(u, "DYLD_") {
			return deny("commands", "env may not set %s while commands are restricted", k)
		}
	}
	if shell != "" || len(argv) == 0 {
		if !slices.Contains(p.Commands, Shell) {
			return deny("commands", "shell text needs %q in commands (allowed: %s)", Shell, strings.Join(p.Commands, ", "))
		}
		return nil
	}
	name := argv[0]
	if strings.ContainsAny(name, `/\`) {
		return deny("commands", "%q: give an allowed command by name, not a path", name)
	}
	if !slices.Contains(p.Commands, name) {
		return deny("commands", "%q is not in commands (allowed: %s)", name, strings.Join(p.Commands, ", "))
	}
	return nil
}

// Hidden reports whether clean slash path rel (relative to the root, "."
// for the root) is denied by denyPaths: it or one of its parents matches.
// Walks (list, search, find, watch, archive) leave such paths out.
func (p *Policy) Hidden(rel string) bool {
	if p == nil || len(p.deny) == 0 || rel == "." || rel == "" {
		return false
	}
	if foldCase {
		rel = strings.ToLower(rel)
	}
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	for n := 1; n <= len(segs); n++ {
		for _, g := range p.deny {
			if g.match(segs[:n]) {
				return true
			}
		}
	}
	return false
}

// Path checks one path a call names, as given and as resolved (the agent
// resolves symbolic links before asking): rel must be clean and relative.
func (p *Policy) Path(rel string) error {
	if p.Hidden(rel) {
		return deny("denyPaths", "%s is a denied path", rel)
	}
	return nil
}

// AllowPort checks a port the ports feature would reach on the machine.
func (p *Policy) AllowPort(port int) error {
	if p == nil || p.Ports == nil || slices.Contains(p.Ports, port) {
		return nil
	}
	return deny("ports", "port %d is not in ports", port)
}

// maxStars bounds the "**" of one pattern, which bound the work of a match.
const maxStars = 4

// glob is one compiled denyPaths pattern: its path elements.
type glob []string

// compileGlob checks pattern s: relative, clean, each element a valid
// path.Match pattern or "**".
func compileGlob(s string) (glob, error) {
	if s == "" || strings.HasPrefix(s, "/") || strings.ContainsRune(s, 0) || strings.Contains(s, `\`) {
		return nil, fmt.Errorf("%q: a glob relative to the root, with / between elements", s)
	}
	s = strings.TrimSuffix(s, "/")
	if foldCase {
		s = strings.ToLower(s)
	}
	var g glob
	stars := 0
	for _, e := range strings.Split(s, "/") {
		if e == "**" && len(g) > 0 && g[len(g)-1] == "**" {
			continue // "**/**" is "**"
		}
		g = append(g, e)
	}
	for _, e := range g {
		if e == "" || e == "." || e == ".." {
			return nil, fmt.Errorf("%q: empty, . or .. element", s)
		}
		if e == "**" {
			if stars++; stars > maxStars {
				return nil, fmt.Errorf("%q: more than %d ** elements", s, maxStars)
			}
			continue
		}
		if _, err := path.Match(e, ""); err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
	}
	return g, nil
}

// match reports whether the elements of a path match g exactly.
func (g glob) match(segs []string) bool {
	if len(g) == 0 {
		return len(segs) == 0
	}
	if g[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if g[1:].match(segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	if ok, _ := path.Match(g[0], segs[0]); !ok {
		return false
	}
	return g[1:].match(segs[1:])
}

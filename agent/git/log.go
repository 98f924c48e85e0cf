package git

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultLogMax is how many commits Log returns when LogOptions.Max is zero.
const DefaultLogMax = 100

// LogOptions control Log.
type LogOptions struct {
	// Max is the most commits returned; zero means DefaultLogMax.
	Max int
	// Ref is where history starts (default HEAD); a range "a..b" works.
	Ref string
}

// Commit is one commit of a log.
type Commit struct {
	// OID is the commit id.
	OID string
	// Author and Email identify the author.
	Author, Email string
	// Time is the author time, in the author's zone.
	Time time.Time
	// Subject is the first line of the message.
	Subject string
}

// logFormat prints a commit's fields separated by US (0x1f); -z ends each
// commit with NUL. The subject, last, is one line.
const logFormat = "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s"

// Log lists commits newest first with `git log -z`. Before the first commit
// (an unborn HEAD) it is empty; an unknown Ref is ErrUnknownRevision; dir
// must be in a work tree (else ErrNotRepository).
func (g *Git) Log(ctx context.Context, dir string, opts LogOptions) ([]Commit, error) {
	n := opts.Max
	switch {
	case n < 0:
		return nil, errorf(os.ErrInvalid, "git log: negative max %d", n)
	case n == 0:
		n = DefaultLogMax
	}
	rev := opts.Ref
	if rev != "" {
		if err := checkRef(rev); err != nil {
			return nil, err
		}
	}
	if err := g.requireRepo(ctx, dir); err != nil {
		return nil, err
	}
	if !strings.Contains(rev, "..") {
		_, ok, err := g.resolve(ctx, dir, or(rev, "HEAD"))
		switch {
		case err != nil:
			return nil, err
		case !ok && rev == "":
			return []Commit{}, nil
		case !ok:
			return nil, notFoundRef(rev, nil)
		}
	}
	args := []string{"log", "-z", "--no-color", "--no-show-signature", logFormat, "-n", strconv.Itoa(n), or(rev, "HEAD"), "--"}
	out, err := g.output(ctx, dir, os.ErrInvalid, args...)
	if err != nil {
		return nil, err
	}
	commits, err := ParseLog(out)
	if err != nil {
		return nil, errorf(nil, "git log: %v", err)
	}
	return commits, nil
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ParseLog parses `git log -z` output in logFormat. It never panics;
// malformed input is an error.
func ParseLog(b []byte) ([]Commit, error) {
	commits := []Commit{}
	for _, rec := range splitNUL(b) {
		f := strings.SplitN(rec, "\x1f", 5)
		if len(f) != 5 || f[0] == "" {
			return nil, fmt.Errorf("bad log record %q", rec)
		}
		t, err := time.Parse(time.RFC3339, f[3])
		if err != nil {
			return nil, fmt.Errorf("bad log record %q: %w", rec, err)
		}
		commits = append(commits, Commit{OID: f[0], Author: f[1], Email: f[2], Time: t, Subject: f[4]})
	}
	return commits, nil
}

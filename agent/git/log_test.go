package git

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestLog(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	if got, err := g.Log(ctx, dir, LogOptions{}); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("unborn Log = %#v, %v; want empty", got, err)
	}
	start := time.Now().Add(-time.Minute)
	for _, s := range []string{"first", "second", "third: with | odd\tchars"} {
		commitFiles(t, ctx, g, dir, s, map[string]string{"f": s})
	}
	tests := []struct {
		name     string
		opts     LogOptions
		subjects []string
		code     string
	}{
		{"all", LogOptions{}, []string{"third: with | odd\tchars", "second", "first"}, ""},
		{"max", LogOptions{Max: 2}, []string{"third: with | odd\tchars", "second"}, ""},
		{"ref", LogOptions{Ref: "HEAD~1"}, []string{"second", "first"}, ""},
		{"range", LogOptions{Ref: "HEAD~2..HEAD~1"}, []string{"second"}, ""},
		{"unknown ref", LogOptions{Ref: "nope"}, nil, "unknown_revision"},
		{"option as ref", LogOptions{Ref: "-p"}, nil, "invalid"},
		{"negative max", LogOptions{Max: -1}, nil, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := g.Log(ctx, dir, tc.opts)
			if kindOf(err) != tc.code {
				t.Fatalf("Log = %v, want %q", err, tc.code)
			}
			var subjects []string
			for _, c := range got {
				subjects = append(subjects, c.Subject)
				if c.Author != "Test Author" || c.Email != "author@example.com" || len(c.OID) < 40 || c.Time.Before(start) {
					t.Errorf("commit %+v", c)
				}
			}
			if !slices.Equal(subjects, tc.subjects) {
				t.Errorf("subjects = %q, want %q", subjects, tc.subjects)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	ctx, g := newGit(t)
	v, err := g.Version(ctx)
	if err != nil || v == "" || v[0] < '0' || v[0] > '9' {
		t.Errorf("Version = %q, %v", v, err)
	}
}

func TestMissingDir(t *testing.T) {
	ctx, g := newGit(t)
	if _, err := g.Status(ctx, filepath.Join(t.TempDir(), "nope"), StatusOptions{}); kindOf(err) != "not_exist" {
		t.Errorf("Status of a missing directory = %v, want not_exist", err)
	}
}

func TestMissingBinary(t *testing.T) {
	ctx, g := newGit(t)
	g.Path = "/nonexistent/git"
	if _, err := g.Status(ctx, t.TempDir(), StatusOptions{}); kindOf(err) != "no_git" {
		t.Errorf("Status with no git = %v, want no_git", err)
	}
	g.Path = "outpost-no-such-git"
	if _, err := g.Status(ctx, t.TempDir(), StatusOptions{}); kindOf(err) != "no_git" {
		t.Errorf("Status with no git = %v, want no_git", err)
	}
}

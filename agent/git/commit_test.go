package git

import (
	"strings"
	"testing"
)

func TestCommit(t *testing.T) {
	tests := []struct {
		name   string
		setup  map[string]string // files written after the first commit
		stage  bool
		opts   CommitOptions
		code   string
		author string // "name <email>" of the new commit
	}{
		{"staged", map[string]string{"a.txt": "2"}, true, CommitOptions{Message: "two\n\nbody"}, "", "Test Author <author@example.com>"},
		{"all", map[string]string{"a.txt": "2"}, false, CommitOptions{Message: "two", All: true}, "", "Test Author <author@example.com>"},
		{"unstaged without all", map[string]string{"a.txt": "2"}, false, CommitOptions{Message: "two"}, "nothing_to_commit", ""},
		{"untracked only", map[string]string{"new.txt": "n"}, false, CommitOptions{Message: "two", All: true}, "nothing_to_commit", ""},
		{"nothing", nil, false, CommitOptions{Message: "two"}, "nothing_to_commit", ""},
		{"include untracked", map[string]string{"new.txt": "n"}, false, CommitOptions{Message: "two", IncludeUntracked: true}, "", "Test Author <author@example.com>"},
		{"author", map[string]string{"a.txt": "2"}, true,
			CommitOptions{Message: "two", AuthorName: "Ada L", AuthorEmail: "ada@example.com"}, "", "Ada L <ada@example.com>"},
		{"bad author", map[string]string{"a.txt": "2"}, true, CommitOptions{Message: "two", AuthorName: "x <y>"}, "invalid", ""},
		{"empty message", map[string]string{"a.txt": "2"}, true, CommitOptions{Message: " \n"}, "invalid", ""},
		{"message like an option", map[string]string{"a.txt": "2"}, true, CommitOptions{Message: "--amend"}, "", "Test Author <author@example.com>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, g := newGit(t)
			dir := newRepo(t, ctx, g)
			commitFiles(t, ctx, g, dir, "one", map[string]string{"a.txt": "1"})
			writeFiles(t, dir, tc.setup)
			if tc.stage {
				mustGit(t, ctx, g, dir, "add", "-A")
			}
			res, err := g.Commit(ctx, dir, tc.opts)
			if kindOf(err) != tc.code {
				t.Fatalf("Commit = %v, want %q", err, tc.code)
			}
			count := strings.TrimSpace(mustGit(t, ctx, g, dir, "rev-list", "--count", "HEAD"))
			if err != nil {
				if count != "1" {
					t.Errorf("%s commits after a failed Commit", count)
				}
				return
			}
			head := strings.TrimSpace(mustGit(t, ctx, g, dir, "rev-parse", "HEAD"))
			subject, _, _ := strings.Cut(tc.opts.Message, "\n")
			if res.OID != head || res.Summary != subject || count != "2" {
				t.Errorf("Commit = %+v (%s commits), want %s %q", res, count, head, subject)
			}
			if got := mustGit(t, ctx, g, dir, "log", "-1", "--format=%an <%ae>"); got != tc.author+"\n" {
				t.Errorf("author = %q, want %q", got, tc.author)
			}
		})
	}
}

func TestCommitUnbornAndUnmerged(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	writeFiles(t, dir, map[string]string{"a.txt": "a"})
	mustGit(t, ctx, g, dir, "add", "a.txt")
	if res, err := g.Commit(ctx, dir, CommitOptions{Message: "first"}); err != nil || res.OID == "" {
		t.Fatalf("first Commit = %+v, %v", res, err)
	}
	dir = conflictRepo(t, ctx, g)
	_, err := g.Commit(ctx, dir, CommitOptions{Message: "merge", All: true})
	if kindOf(err) != "unmerged" || !strings.Contains(err.Error(), "unmerged") {
		t.Errorf("Commit with unmerged paths = %v, want unmerged", err)
	}
}

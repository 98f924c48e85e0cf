package files

import (
	"context"
	iofs "io/fs"
	"strings"
	"time"
)

// Survey is a listing of a directory tree, every entry with its Lstat,
// taken while a restore waits for its manifest (StartSurvey): a carry
// begins the restore before the other side's scan, so the receiving side
// lists what it has at the same time as the sending side scans, and
// BeginRestore then finds the files of the manifest in what it listed
// instead of listing the tree on the carry's critical path. It only reads.
//
// A listing is as old as the survey: a file written on the receiving side
// after it was listed and before the restore's commit may keep that write,
// as with any write racing a restore (or rsync); and with Delete, a file
// made after its directory was listed stays, when the commit's walk goes
// by the listings (see maxListingAge).
type Survey struct {
	at     time.Time // when it began
	base   string
	cancel context.CancelFunc
	done   chan struct{}
	listed map[string]map[string]iofs.FileInfo // complete once done is closed
	n      int                                 // entries listed
}

// surveyMaxEntries bounds what a survey keeps: a tree the manifest barely
// touches (an ignored node_modules, build output) is not held in memory
// whole. Past it the survey stops; the plan lists what it did not reach.
var surveyMaxEntries = 200_000

// StartSurvey lists directory p and every directory under it (never
// through symlinks, leaving out the paths SetHidden hides) in a goroutine
// of its own, which ends when it is done or on Stop. A path that is not a
// clean directory gives an empty survey.
func (f *FS) StartSurvey(p string) *Survey {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Survey{at: time.Now(), cancel: cancel, done: make(chan struct{}), listed: map[string]map[string]iofs.FileInfo{}}
	base, err := Clean(p)
	if err != nil {
		close(s.done)
		return s
	}
	s.base = base
	go func() {
		defer close(s.done)
		f.survey(ctx, s, base)
	}()
	return s
}

// survey lists directory c and those under it into s.listed.
func (f *FS) survey(ctx context.Context, s *Survey, c string) {
	if ctx.Err() != nil || f.hidden(c) {
		return
	}
	infos, err := f.readDir(c)
	if err != nil {
		return // BeginRestore lists it again itself
	}
	if s.n += len(infos); s.n > surveyMaxEntries {
		s.cancel() // c and what is left are the plan's to list
		return
	}
	list := make(map[string]iofs.FileInfo, len(infos))
	for _, fi := range infos {
		list[fi.Name()] = fi
	}
	s.listed[c] = list
	for _, fi := range infos {
		if fi.IsDir() && !strings.HasPrefix(fi.Name(), TempPrefix) {
			f.survey(ctx, s, join(c, fi.Name()))
		}
	}
}

// Stop ends the survey and waits for its goroutine. It may be called more
// than once.
func (s *Survey) Stop() {
	s.cancel()
	<-s.done
}

// take stops the survey and returns the directories it listed completely,
// when it surveyed base (else nil). A survey still under way when the
// manifest is complete is not waited for: what it has not listed yet, the
// plan lists itself, as without a survey.
func (s *Survey) take(base string) map[string]map[string]iofs.FileInfo {
	s.Stop()
	if s.base != base || len(s.listed) == 0 {
		return nil
	}
	return s.listed
}

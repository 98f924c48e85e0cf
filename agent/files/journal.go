package files

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"strconv"
	"sync"
)

// A journal records the temporary files of writes in progress, so that a
// daemon that restarts after a crash (or a kill, or a power loss) removes
// the ones its last run left behind. Temporary files live beside their
// targets, anywhere under the root, so the journal is what makes them "known
// places": the sweep at start removes exactly what the journal lists and
// never walks the tree, however large it is.
//
// The file is a list of lines, `+"path"` when a temporary file is about to
// be created (synced before the file exists) and `-"path"` once it is gone
// or renamed into place; paths are root-relative and Go-quoted. It is
// emptied whenever no write is in progress, and rewritten with only the
// live entries when it grows past journalCompactAt and twice the most it
// listed since it was last empty (so that a batch of many records, see
// addAll, is not rewritten at every '-' that follows it).
type journal struct {
	path string

	mu   sync.Mutex
	file *os.File // opened for appending
	size int64
	live map[string]int64 // the live entries, with the size of their records
	// liveBytes is the size of the live entries' records, peak its
	// largest since the journal was last empty.
	liveBytes, peak int64
	// syncs counts the journal's fsyncs (for tests and benchmarks).
	syncs int
}

// journalCompactAt is the size past which the journal is rewritten with
// only its live entries (a variable for tests).
var journalCompactAt int64 = 64 << 10

// maxJournalSize bounds what OpenJournal reads of an old journal.
const maxJournalSize = 16 << 20

// OpenJournal removes the temporary files that the journal at path lists
// (writes a crash interrupted) and records the temporary files of this FS's
// writes there from now on. It returns the root-relative paths it removed.
// A missing journal is created (mode 0600). Only names starting with
// TempPrefix are ever removed, and only inside the root. Call it once,
// before the first write, from the one daemon that owns path.
//
// Recording is best effort: a write whose record cannot be written goes
// on, and only its cleanup after a crash is lost.
func (f *FS) OpenJournal(path string) ([]string, error) {
	old, err := readJournal(path)
	if err != nil {
		return nil, err
	}
	var removed []string
	for p := range old {
		if f.removeTemp(p) {
			removed = append(removed, p)
		}
	}
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return removed, fmt.Errorf("journal: %w", err)
	}
	if err := file.Truncate(0); err != nil {
		file.Close()
		return removed, fmt.Errorf("journal: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.journal != nil {
		file.Close()
		return removed, errors.New("journal: already open")
	}
	f.journal = &journal{path: path, file: file, live: map[string]int64{}}
	return removed, nil
}

// readJournal returns the live entries of the journal at path; a missing
// journal has none, and a torn last line (a crash while writing it) is
// ignored.
func readJournal(path string) (map[string]bool, error) {
	live := map[string]bool{}
	fi, err := os.Stat(path)
	if errors.Is(err, iofs.ErrNotExist) {
		return live, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if fi.Size() > maxJournalSize {
		return nil, fmt.Errorf("journal %s: %d bytes, more than a journal can hold (%d); remove it", path, fi.Size(), maxJournalSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxJournalSize)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		p, err := strconv.Unquote(line[1:])
		if err != nil {
			continue
		}
		switch line[0] {
		case '+':
			live[p] = true
		case '-':
			delete(live, p)
		}
	}
	return live, nil
}

// removeTemp removes the temporary file at root-relative p, if it is one
// and still there; it reports whether it removed it.
func (f *FS) removeTemp(p string) bool {
	c, err := Clean(p)
	if err != nil || !isTemp(c) {
		return false
	}
	fi, err := f.root.Lstat(native(c))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return f.root.Remove(native(c)) == nil
}

// recordTemp notes that temporary file c is about to be created.
func (f *FS) recordTemp(c string) {
	if j := f.journalOf(); j != nil {
		j.add(c)
	}
}

// recordTemps is recordTemp for many names, recorded with one write and
// one sync.
func (f *FS) recordTemps(cs []string) {
	if j := f.journalOf(); j != nil {
		j.addAll(cs)
	}
}

// forgetTemp notes that temporary file c is gone or renamed into place.
func (f *FS) forgetTemp(c string) {
	if j := f.journalOf(); j != nil {
		j.remove(c)
	}
}

// forgetTemps is forgetTemp for many names, recorded with one write.
func (f *FS) forgetTemps(cs []string) {
	if j := f.journalOf(); j != nil {
		j.removeAll(cs)
	}
}

func (f *FS) journalOf() *journal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.journal
}

// add records c, synced, before the file exists.
func (j *journal) add(c string) { j.addAll([]string{c}) }

// addAll records every path of cs, before any of their files exists,
// with one write and one sync: a restore reserves the temporary names of
// many files at once (see Restore.reserve).
func (j *journal) addAll(cs []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file == nil || len(cs) == 0 {
		return
	}
	var buf []byte
	for _, c := range cs {
		if _, ok := j.live[c]; ok {
			continue
		}
		n := len(buf)
		buf = appendRecord(buf, '+', c)
		j.live[c] = int64(len(buf) - n)
		j.liveBytes += int64(len(buf) - n)
	}
	j.peak = max(j.peak, j.liveBytes)
	if len(buf) > 0 && j.write(buf) == nil {
		j.sync(j.file)
	}
}

// remove records that c is gone: the journal is emptied when nothing is in
// progress, compacted when it grew large.
func (j *journal) remove(c string) { j.removeAll([]string{c}) }

// removeAll records that every path of cs is gone, with one write.
func (j *journal) removeAll(cs []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file == nil {
		return
	}
	var buf []byte
	for _, c := range cs {
		n, ok := j.live[c]
		if !ok {
			continue
		}
		delete(j.live, c)
		j.liveBytes -= n
		buf = appendRecord(buf, '-', c)
	}
	switch {
	case len(buf) == 0:
	case len(j.live) == 0:
		if j.file.Truncate(0) == nil {
			j.size = 0
		}
		j.liveBytes, j.peak = 0, 0
	case j.size >= max(journalCompactAt, 2*j.peak):
		j.compact()
	default:
		_ = j.write(buf)
	}
}

// recordSize is the length of c's line (for a batch's budget).
func recordSize(c string) int64 {
	var b [128]byte
	return int64(len(appendRecord(b[:0], '+', c)))
}

// appendRecord appends c's line, op '+' or '-', to buf.
func appendRecord(buf []byte, op byte, c string) []byte {
	buf = append(buf, op)
	buf = strconv.AppendQuote(buf, c)
	return append(buf, '\n')
}

// write appends lines.
func (j *journal) write(lines []byte) error {
	n, err := j.file.Write(lines)
	j.size += int64(n)
	return err
}

// sync syncs f, counted.
func (j *journal) sync(f *os.File) {
	_ = f.Sync()
	j.syncs++
}

// syncCount is how many times the journal was synced.
func (j *journal) syncCount() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncs
}

// compact rewrites the journal with only the live entries: a new file,
// synced, renamed over the old one.
func (j *journal) compact() {
	var buf []byte
	for c := range j.live {
		buf = appendRecord(buf, '+', c)
	}
	tmp := j.path + ".new"
	if err := os.WriteFile(tmp, buf, 0o600); err != nil {
		os.Remove(tmp)
		return
	}
	if f, err := os.Open(tmp); err == nil {
		j.sync(f)
		f.Close()
	}
	j.file.Close()
	j.file = nil
	if err := os.Rename(tmp, j.path); err != nil {
		os.Remove(tmp)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return // recording stops; writes go on
	}
	j.file = f
	if fi, err := f.Stat(); err == nil {
		j.size = fi.Size()
	}
}

// close closes the journal file; entries still live stay listed for the
// next start's sweep.
func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file != nil {
		j.file.Close()
		j.file = nil
	}
}

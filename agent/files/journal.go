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
// live entries when it grows past journalCompactAt.
type journal struct {
	path string

	mu   sync.Mutex
	file *os.File // opened for appending
	size int64
	live map[string]bool
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
	f.journal = &journal{path: path, file: file, live: map[string]bool{}}
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

// forgetTemp notes that temporary file c is gone or renamed into place.
func (f *FS) forgetTemp(c string) {
	if j := f.journalOf(); j != nil {
		j.remove(c)
	}
}

func (f *FS) journalOf() *journal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.journal
}

// add records c, synced, before the file exists.
func (j *journal) add(c string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file == nil {
		return
	}
	j.live[c] = true
	if j.append('+', c) == nil {
		_ = j.file.Sync()
	}
}

// remove records that c is gone: the journal is emptied when nothing is in
// progress, compacted when it grew large.
func (j *journal) remove(c string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file == nil || !j.live[c] {
		return
	}
	delete(j.live, c)
	switch {
	case len(j.live) == 0:
		if j.file.Truncate(0) == nil {
			j.size = 0
		}
	case j.size >= journalCompactAt:
		j.compact()
	default:
		_ = j.append('-', c)
	}
}

// append writes one line.
func (j *journal) append(op byte, c string) error {
	line := append([]byte{op}, strconv.Quote(c)...)
	n, err := j.file.Write(append(line, '\n'))
	j.size += int64(n)
	return err
}

// compact rewrites the journal with only the live entries: a new file,
// synced, renamed over the old one.
func (j *journal) compact() {
	var buf bytes.Buffer
	for c := range j.live {
		buf.WriteByte('+')
		buf.WriteString(strconv.Quote(c))
		buf.WriteByte('\n')
	}
	tmp := j.path + ".new"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
		os.Remove(tmp)
		return
	}
	if f, err := os.Open(tmp); err == nil {
		_ = f.Sync()
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

package agent

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/outposthq/outpost/agent/policy"
)

// checkOpened refuses a file that, once open, turns out to be under a
// denied path: the path was checked at dispatch with its links resolved,
// but a link along it may have been changed since (an archive or a
// snapshot restore can write links). Where the system says which file an
// open descriptor is (Linux), this closes that window for reads.
func (a *Agent) checkOpened(f *os.File, given string) error {
	p := a.cfg.Policy.Current()
	if p == nil || len(p.DenyPaths) == 0 {
		return nil
	}
	real, ok := openedPath(f)
	if !ok {
		return nil
	}
	rel, err := filepath.Rel(a.files.realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil // the file layer keeps opens inside the root
	}
	rel = filepath.ToSlash(rel)
	if p.Hidden(rel) {
		return &policy.Denial{Rule: "denyPaths", Detail: given + " opened " + rel + ", a denied path (a link along it changed after the check)"}
	}
	return nil
}

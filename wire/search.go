package wire

// Search ops (API.md's fs/search and fs/find): reads.
const (
	OpFsSearch = "fs.search"
	OpFsFind   = "fs.find"
)

// Search limits: maxResults defaults to DefaultSearchResults and may not
// pass MaxSearchResults, which keeps one reply well under a NATS payload.
const (
	DefaultSearchResults = 1000
	MaxSearchResults     = 10000
	// MaxQueryLen bounds a query or glob.
	MaxQueryLen = 4096
)

func init() {
	RegisterOp(OpFsSearch, OpInfo{})
	RegisterOp(OpFsFind, OpInfo{})
}

// FsSearchRequest is the body of fs.search.
type FsSearchRequest struct {
	Path       string `msgpack:"path"`
	Query      string `msgpack:"q"`
	Regex      bool   `msgpack:"re,omitempty"`
	Glob       string `msgpack:"glob,omitempty"`
	MaxResults int    `msgpack:"max"`
}

// Validate checks the fields.
func (r *FsSearchRequest) Validate() error {
	if err := validPath("path", r.Path); err != nil {
		return err
	}
	if r.Query == "" || len(r.Query) > MaxQueryLen {
		return Errorf(CodeInvalidArgument, "", "query must be 1 to %d bytes", MaxQueryLen)
	}
	if len(r.Glob) > MaxQueryLen {
		return Errorf(CodeInvalidArgument, "", "glob must be at most %d bytes", MaxQueryLen)
	}
	return validMaxResults(r.MaxResults)
}

func validMaxResults(n int) error {
	if n < 1 || n > MaxSearchResults {
		return Errorf(CodeInvalidArgument, "", "maxResults must be 1 to %d", MaxSearchResults)
	}
	return nil
}

// FsSearchMatch is one matching line.
type FsSearchMatch struct {
	Path   string `msgpack:"path"`
	Line   int    `msgpack:"line"`
	Column int    `msgpack:"col"`
	Text   string `msgpack:"text"`
}

// FsSearchResult is the result of fs.search.
type FsSearchResult struct {
	Matches   []FsSearchMatch `msgpack:"m"`
	Truncated bool            `msgpack:"trunc,omitempty"`
}

// FsFindRequest is the body of fs.find.
type FsFindRequest struct {
	Path       string `msgpack:"path"`
	Glob       string `msgpack:"glob"`
	MaxResults int    `msgpack:"max"`
}

// Validate checks the fields.
func (r *FsFindRequest) Validate() error {
	if err := validPath("path", r.Path); err != nil {
		return err
	}
	if r.Glob == "" || len(r.Glob) > MaxQueryLen {
		return Errorf(CodeInvalidArgument, "", "glob must be 1 to %d bytes", MaxQueryLen)
	}
	return validMaxResults(r.MaxResults)
}

// FsFindResult is the result of fs.find, sorted by path.
type FsFindResult struct {
	Entries   []FileEntry `msgpack:"entries"`
	Truncated bool        `msgpack:"trunc,omitempty"`
}

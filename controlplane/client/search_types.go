package client

// SearchMatch is one matching line of GET {target}/fs/search: 1-based line
// and byte column of the first match on it.
type SearchMatch struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Text   string `json:"text"`
}

// SearchResult is the result of GET {target}/fs/search.
type SearchResult struct {
	Matches   []SearchMatch `json:"matches"`
	Truncated bool          `json:"truncated"`
}

// FindResult is the result of GET {target}/fs/find.
type FindResult struct {
	Entries   []FileStat `json:"entries"`
	Truncated bool       `json:"truncated"`
}

// SearchOptions are the parameters of fs/search; MaxResults 0 is the
// server's default.
type SearchOptions struct {
	Path, Query, Glob string
	Regex             bool
	MaxResults        int
}

// WatchEvent is one event of GET {target}/fs/watch: op create, write,
// remove or rename (the old name; the new one comes as create); Reset
// (an `event: reset`) says events were lost.
type WatchEvent struct {
	Seq   uint64 `json:"-"`
	Path  string `json:"path"`
	Op    string `json:"op"`
	Reset bool   `json:"-"`
}

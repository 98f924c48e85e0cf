package client

// UnpackResult is the result of PUT {target}/fs/archive: what the tar
// stream put under path (links count symlinks and hard links).
type UnpackResult struct {
	Path  string `json:"path"`
	Files int    `json:"files"`
	Dirs  int    `json:"dirs"`
	Links int    `json:"links"`
	Bytes int64  `json:"bytes"`
}

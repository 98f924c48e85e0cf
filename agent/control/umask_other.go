//go:build !unix

package control

// umask does nothing where there is none (Windows: the socket file lives in
// the user's profile).
func umask(m int) int { return m }

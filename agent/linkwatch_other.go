//go:build !linux

package agent

// linkNotifications is Linux only; elsewhere the watcher's one-second look
// finds changes.
func linkNotifications(stop <-chan struct{}) (<-chan struct{}, func()) { return nil, func() {} }

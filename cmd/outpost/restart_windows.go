package main

import "errors"

// restartSelf cannot replace a process on Windows: the agent exits with an
// error, and the service's recovery actions start the new binary.
func restartSelf(string) error {
	return errors.New("updated: the service manager restarts the agent as the new version")
}

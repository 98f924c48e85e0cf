package main

import "os"

// notifyResize does nothing: Windows has no SIGWINCH; the size is set at
// start.
func notifyResize(chan<- os.Signal) {}

//go:build !linux

package main

import "os/exec"

// setParentDeath does nothing here: only Linux has a parent-death signal.
func setParentDeath(*exec.Cmd) {}

package proc

// newConfiner: darwin has no cgroups and no prlimit; a command with limits
// starts through the start shim (shim_unix.go), which takes RLIMIT_AS and
// RLIMIT_NPROC for itself before it execs the command.
func newConfiner() confiner { return shimRlimits{} }

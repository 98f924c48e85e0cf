package proc

// newConfiner: darwin has no cgroups and no prlimit; each command starts
// through the rlimit shim (rlimitshim_unix.go), which sets RLIMIT_AS and
// RLIMIT_NPROC on itself before it execs the command.
func newConfiner() confiner { return shimRlimits{} }

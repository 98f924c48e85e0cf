package proc

import "os/exec"

// Resources bound one started process and everything it starts (the
// machine owner's policy "limits"). Zero fields are no bound.
type Resources struct {
	// MemoryBytes bounds memory (a cgroup's memory, or under rlimits the
	// address space of each process).
	MemoryBytes int64
	// CPUPercent bounds CPU time, 100 being one core (cgroups only).
	CPUPercent int
	// Processes bounds the processes and threads alive in the tree
	// (cgroups), or under rlimits those of the agent's user.
	Processes int
}

// IsZero reports whether r bounds nothing.
func (r Resources) IsZero() bool { return r == Resources{} }

// Mechanisms that apply Resources, as LimitsBy reports them.
const (
	LimitsByCgroup2 = "cgroup2"
	LimitsByCgroup1 = "cgroup1"
	LimitsByRlimit  = "rlimit"
	LimitsByNone    = "none"
)

// confiner applies Resources to processes on this machine.
type confiner interface {
	// mechanism is one of the LimitsBy* names.
	mechanism() string
	// prepare readies a box for cmd before it starts.
	prepare(cmd *exec.Cmd, r Resources) (box, error)
}

// box holds one process tree within its bounds.
type box interface {
	// place puts the started leader pid in the box.
	place(pid int) error
	// release kills what is left in the box and removes it.
	release()
}

// LimitsBy is how this Manager applies Resources: "cgroup2" where it may
// make a sub-cgroup of its own with the memory and pids controllers,
// "cgroup1" where it may make cgroups in the v1 pids, memory and cpu
// hierarchies, "rlimit" otherwise on Linux and on darwin, "none" elsewhere.
func (m *Manager) LimitsBy() string { return m.confine.mechanism() }

// boxFor prepares the box of cmd under the Resources in force, or nil.
func (m *Manager) boxFor(cmd *exec.Cmd) (box, error) {
	if m.resources == nil {
		return nil, nil
	}
	r := m.resources()
	if r.IsZero() {
		return nil, nil
	}
	return m.confine.prepare(cmd, r)
}

// Package rawio reads and writes non-blocking descriptors (sockets, PTY
// masters, pipes on Go's poller) with direct system calls on Linux:
// without the runtime's entersyscall, which, in a process idle between
// two keystrokes, wakes the runtime's monitor thread (sysmon) with a
// futex on every first call, and may hand the P to another thread when
// the call is seen to last. A keystroke's hops through a terminal's path
// are a read and a write each; this keeps them to those two calls, as a
// C program's poll loop (ssh's) makes them. Elsewhere, and for large
// buffers (a call that copies much holds its P), the ordinary calls.
//
// Only for descriptors that never wait in non-blocking mode: sockets,
// pipes, terminals and PTYs. A regular file's read may wait for the disk
// whatever its flags, and a direct call would hold its P meanwhile.
package rawio

// Max is the largest buffer read or written with a direct call.
const Max = 64 << 10

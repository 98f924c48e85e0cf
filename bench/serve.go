package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// benchAdminToken is the admin token of control planes the bench starts.
const benchAdminToken = "opadm_bench-admin-token-0123456789"

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// outpostBinary builds ./cmd/outpost once per run, into a directory of its
// own that outlives each env's (-transport plain,tls runs two);
// removeBinary removes it when the run ends.
func outpostBinary(ctx context.Context) (string, error) {
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "outpost-bench-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "outpost")
		// Built as a release is: static (no cgo), so that starting it does
		// not load libc (about 3 ms of every CLI call here).
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", binPath, "./cmd/outpost")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build outpost (run the bench from the repo root): %v\n%s", err, out)
		}
	})
	return binPath, binErr
}

// removeBinary removes what outpostBinary built.
func removeBinary() {
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}

// serveProc is an `outpost serve` process: the control plane and its
// embedded NATS (or, with -nats-apart, the nats-server it connects to) on
// their own, so their memory can be read apart from the agents the bench
// runs in its own process.
type serveProc struct {
	cmd      *exec.Cmd
	url      string
	stateDir string
	pprof    string // the address of its /debug/pprof/ and /debug/metrics
	done     chan struct{}

	bin, dir string // how it was started, for restart
	serveAt
	hc       *http.Client  // trusts its CA (with TLS)
	profiled chan struct{} // closed when the storm's profile is written
	natsCPU0 time.Duration // with NATS apart, that process's CPU time when this one started
}

// serveProfile, when set (-cpuprofile), is where the load suite writes a CPU
// profile of the `outpost serve` process taken while it drives calls.
var serveProfile string

func startServe(ctx context.Context, bin, dir string, tlsOn bool, nats *natsProc) (*serveProc, error) {
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	natsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	return startServeAt(ctx, bin, dir, serveAt{httpPort: httpPort, natsPort: natsPort, tls: tlsOn, nats: nats}, nil)
}

// serveAt is where `outpost serve` listens, and on what NATS.
type serveAt struct {
	httpPort, natsPort int       // natsPort: the embedded server's (unused with nats)
	tls                bool      // HTTPS with --tls-self-signed, agents on wss:// through its port
	nats               *natsProc // nil: serve embeds its NATS
}

// restart stops p and starts `outpost serve` again on the same ports and
// state dir, as an operator restarting the control plane does. started is
// when the new process was started.
func (p *serveProc) restart(ctx context.Context) (np *serveProc, started time.Time, err error) {
	p.stop()
	started = time.Now()
	var onStart func(*serveProc)
	if serveProfile != "" {
		// Profile the new process from its first moments (its pprof
		// listener comes up before it connects to NATS): the storm.
		onStart = func(np *serveProc) {
			np.profiled = make(chan struct{})
			go func() {
				defer close(np.profiled)
				if err := downloadRetry(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=10", np.pprof), serveProfile+".storm", 10*time.Second); err != nil {
					fmt.Fprintln(os.Stderr, "bench: storm profile:", err)
				}
			}()
		}
	}
	np, err = startServeAt(ctx, p.bin, p.dir, p.serveAt, onStart)
	return np, started, err
}

// downloadRetry is download, tried again while it fails for up to wait.
func downloadRetry(u, path string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := download(u, path)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startServeAt starts `outpost serve` on the given ports and waits until
// it is healthy; onStart, when set, is called once the process runs. With
// at.tls it serves HTTPS with a CA it makes in its state dir once (kept
// across restarts), and enrollment sends agents to wss:// on its port.
func startServeAt(ctx context.Context, bin, dir string, at serveAt, onStart func(*serveProc)) (*serveProc, error) {
	scheme := "http://"
	if at.tls {
		scheme = "https://"
	}
	p := &serveProc{
		url:      scheme + "127.0.0.1:" + strconv.Itoa(at.httpPort),
		stateDir: filepath.Join(dir, "serve-state"),
		done:     make(chan struct{}),
		bin:      bin,
		dir:      dir,
		serveAt:  at,
	}
	p.cmd = exec.Command(bin, "serve", "--listen", "127.0.0.1:"+strconv.Itoa(at.httpPort), "--state-dir", p.stateDir)
	if at.nats != nil {
		p.natsCPU0 = procCPU(at.nats.cmd.Process.Pid)
		p.cmd.Args = append(p.cmd.Args, "--nats-url", at.nats.url, "--public-nats-url", at.nats.url)
	} else {
		p.cmd.Args = append(p.cmd.Args, "--nats-listen", "127.0.0.1:"+strconv.Itoa(at.natsPort))
	}
	if at.tls {
		p.cmd.Args = append(p.cmd.Args, "--tls-self-signed", "127.0.0.1")
	}
	// Always: the load suites read its figures from /debug/metrics there.
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p.pprof = "127.0.0.1:" + strconv.Itoa(port)
	p.cmd.Args = append(p.cmd.Args, "--pprof", p.pprof)
	p.cmd.Env = append(os.Environ(), "OUTPOST_ADMIN_TOKEN="+benchAdminToken)
	p.cmd.Env = append(p.cmd.Env, serveEnv...)
	logf, err := os.OpenFile(filepath.Join(dir, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	setParentDeath(p.cmd) // an interrupted bench leaves no control plane behind
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	if onStart != nil {
		onStart(p)
	}
	// Generous: under a reconnecting fleet on a busy machine a start can
	// be slow, and the storm reports how slow rather than giving up.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := p.healthz()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("outpost serve exited; the end of its log (%s):\n%s", logf.Name(), logTail(logf.Name(), 2048))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("outpost serve not healthy after 2 min; the end of its log (%s):\n%s", logf.Name(), logTail(logf.Name(), 2048))
		}
	}
}

// healthz asks the process for /healthz; with TLS, once its CA is written,
// trusting only that.
func (p *serveProc) healthz() (*http.Response, error) {
	if p.tls && p.hc == nil {
		hc, err := client.TrustingCA(filepath.Join(p.stateDir, "tls", "ca.pem"))
		if err != nil {
			return nil, err
		}
		p.hc = hc
	}
	hc := p.hc
	if hc == nil {
		hc = http.DefaultClient
	}
	return hc.Get(p.url + "/healthz")
}

// httpTransport is a transport for calls to the process that keeps up to
// conns connections, trusting its CA with TLS.
// Every connection it opens is counted in driverDials.
func (p *serveProc) httpTransport(conns int) *http.Transport {
	var d net.Dialer
	t := &http.Transport{MaxIdleConnsPerHost: conns, MaxIdleConns: conns, MaxConnsPerHost: driverConns,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			driverDials.Add(1)
			return d.DialContext(ctx, network, addr)
		}}
	if p.hc != nil {
		t.TLSClientConfig = p.hc.Transport.(*http.Transport).TLSClientConfig
	}
	return t
}

// logTail is the last n bytes of the file at path.
func logTail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, int64(len(b))-n):])
}

// profileCPU takes a CPU profile of the process over d into path, when it
// serves profiles; wait returns when the profile is written.
func (p *serveProc) profileCPU(d time.Duration, path string) (wait func()) {
	return p.pprofOver(serveProfile != "", "profile", d, path)
}

// profileAllocs writes, with -serve-heapprofile FILE, what the process
// allocated over d (the allocs profile's delta: go tool pprof
// -sample_index=alloc_space) to FILE.drive; wait returns when it is written.
// The runtime adds allocations to the profile when a collection ends: a
// drive in which none ended gives an empty delta (FILE.after against FILE
// holds every drive's).
func (p *serveProc) profileAllocs(d time.Duration) (wait func()) {
	return p.pprofOver(serveHeapProfile != "", "allocs", d, serveHeapProfile+".drive")
}

// pprofOver downloads, when on, the process's pprof profile named over d
// seconds into path, in the background; wait returns when it is written.
func (p *serveProc) pprofOver(on bool, profile string, d time.Duration, path string) (wait func()) {
	if !on {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		u := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", p.pprof, profile, int(d.Seconds()))
		if err := download(u, path); err != nil {
			fmt.Fprintf(os.Stderr, "bench: serve %s profile: %v\n", profile, err)
		}
	}()
	return func() { <-done }
}

// driverDials counts the connections the driver's transports opened to
// serve: with TLS each costs serve a handshake (tens of KiB of garbage),
// which a drive's per-call allocation then includes.
var driverDials atomic.Int64

// driverConns, when set (-driver-conns), caps the connections the load
// suite's driver opens to the control plane: a call due while all are busy
// waits in the driver for one (its latency still counts from when it was
// due) instead of opening a new connection, whose TLS handshake serve pays
// for in the middle of the stall that made the calls pile up. warmPool
// opens all of them before the drives.
var driverConns int

// serveTrace, when set (-serve-trace), is where the load suite writes an
// execution trace of the `outpost serve` process taken while it drives the
// mix, and beside it (FILE.block, FILE.mutex) its block and mutex profiles
// of the same seconds: what a slow call waited on.
var serveTrace string

// traceDrive takes serve's execution trace and its block and mutex profiles
// over d, when -serve-trace asks; wait returns when all are written.
func (p *serveProc) traceDrive(d time.Duration) (wait func()) {
	if serveTrace == "" {
		return func() {}
	}
	secs := int(d.Seconds())
	var wg sync.WaitGroup
	for _, f := range []struct{ path, u string }{
		{serveTrace, fmt.Sprintf("http://%s/debug/pprof/trace?seconds=%d", p.pprof, secs)},
		{serveTrace + ".block", fmt.Sprintf("http://%s/debug/pprof/block?seconds=%d", p.pprof, secs)},
		{serveTrace + ".mutex", fmt.Sprintf("http://%s/debug/pprof/mutex?seconds=%d", p.pprof, secs)},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := download(f.u, f.path); err != nil {
				fmt.Fprintln(os.Stderr, "bench: serve trace:", err)
			}
		}()
	}
	return wg.Wait
}

// download writes what GET u answers to path.
func download(u, path string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stop asks for a clean shutdown, then kills.
func (p *serveProc) stop() { stopChild(p.cmd.Process, p.done) }

// stopChild sends a child process SIGTERM and waits for done, killing it
// after 10 s.
func stopChild[T any](p *os.Process, done <-chan T) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.Kill()
		<-done
	}
}

// memory is the process's resident set now and at its peak, from
// /proc (Linux); zero elsewhere. With its NATS apart, that process's is
// added (the peaks' sum: an upper bound of the two's peak together).
func (p *serveProc) memory() (rss, peak int64) {
	rss, peak = procMemory(p.cmd.Process.Pid)
	if p.nats != nil { // what the embedded server would have taken
		r, pk := procMemory(p.nats.cmd.Process.Pid)
		rss, peak = rss+r, peak+pk
	}
	return rss, peak
}

// cpuTime is the CPU time (user + system) the process has used, with its
// NATS apart that process's too since this one started, from /proc
// (Linux); zero elsewhere.
func (p *serveProc) cpuTime() time.Duration {
	t := procCPU(p.cmd.Process.Pid)
	if p.nats != nil {
		t += procCPU(p.nats.cmd.Process.Pid) - p.natsCPU0
	}
	return t
}

// procCPU is the CPU time (user + system) process pid has used, from /proc
// (Linux); zero elsewhere.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name (in parentheses, which may hold spaces):
	// state is the 3rd field of the line, utime and stime the 14th and 15th.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat times:
// 100 on every Linux this runs on.
const clockTicks = 100

func procMemory(pid int) (rss, peak int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

func mib(b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/controlplane/client"
)

// Sizes of the files suite.
const (
	benchFileSize = 1 << 30
	rawChunk      = 2 << 20 // as the control plane's transfers
	rawWindow     = 6
	natsPayload   = 8 << 20 // as the control plane's embedded server
)

// benchFiles: upload and download MB/s of a 1 GiB file through the HTTP API
// (client → control plane → NATS → agent → disk), next to raw NATS
// request/reply throughput with the same chunking and window, and scp of
// the same file to an sshd on loopback when one can be started.
func benchFiles(ctx context.Context, e *env) ([]row, error) {
	src := filepath.Join(e.dir, "src.bin")
	sum, err := makeFile(src, benchFileSize)
	if err != nil {
		return nil, err
	}
	defer os.Remove(src)
	// The machine is shared: each figure is the best of a few rounds, and
	// the rounds interleave Outpost, raw NATS and scp so that a busy
	// moment does not land on one of them only.
	var b filesBest
	rssBefore := peakRSS(os.Getpid())
	for range fileRounds {
		if err := b.round(ctx, e, src, sum); err != nil {
			return nil, err
		}
	}
	rssAfter := peakRSS(os.Getpid())
	mbs := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(benchFileSize)/1e6/d.Seconds()) }
	ratio := func(base, ours time.Duration) string { return fmt.Sprintf("%.2fx", base.Seconds()/ours.Seconds()) }
	rows := []row{
		{Name: "1 GiB upload MB/s (HTTP PUT→agent disk vs raw NATS req/reply)", Outpost: mbs(b.up), Baseline: mbs(b.raw), Ratio: ratio(b.raw, b.up)},
		{Name: "1 GiB download MB/s (HTTP GET←agent disk vs raw NATS req/reply)", Outpost: mbs(b.down), Baseline: mbs(b.raw), Ratio: ratio(b.raw, b.down)},
	}
	if b.scpErr != nil {
		rows = append(rows, row{Name: "1 GiB vs scp", Outpost: "-", Baseline: "skipped: " + b.scpErr.Error(), Goal: "≥ scp"})
	} else {
		rows = append(rows,
			row{Name: "1 GiB upload MB/s vs scp to loopback sshd", Outpost: mbs(b.up), Baseline: mbs(b.scpUp),
				Ratio: ratio(b.scpUp, b.up), Goal: "≥ scp", Met: yesNo(b.up <= b.scpUp)},
			row{Name: "1 GiB download MB/s vs scp from loopback sshd", Outpost: mbs(b.down), Baseline: mbs(b.scpDown),
				Ratio: ratio(b.scpDown, b.down), Goal: "≥ scp", Met: yesNo(b.down <= b.scpDown)})
	}
	rows = append(rows, row{Name: "  CPU s per GiB, upload / download (client + control plane + agent, this process)",
		Outpost: fmt.Sprintf("%.2f / %.2f", b.upCPU.Seconds(), b.downCPU.Seconds())})
	rows = append(rows, row{Name: "peak RSS MiB, control plane + agent in this process: before, after",
		Outpost: fmt.Sprintf("%d, %d", rssBefore>>20, rssAfter>>20), Goal: "no 1 GiB growth",
		Met: yesNo(rssAfter-rssBefore < benchFileSize/4)})
	return rows, nil
}

// fileRounds is how many times each transfer runs; the best counts.
const fileRounds = 2

// filesBest keeps the best duration of each transfer.
type filesBest struct {
	up, down, raw, scpUp, scpDown time.Duration
	upCPU, downCPU                time.Duration // this process's CPU time: client, control plane and agent
	scpErr                        error
}

func better(best *time.Duration, d time.Duration) {
	if *best == 0 || d < *best {
		*best = d
	}
}

// round runs every transfer once.
func (b *filesBest) round(ctx context.Context, e *env, src, sum string) error {
	raw, err := rawNATSRequests(benchFileSize)
	if err != nil {
		return fmt.Errorf("raw nats: %w", err)
	}
	better(&b.raw, raw)
	cpu := processCPU()
	up, err := timed(func() error { return uploadFile(ctx, e, src, sum) })
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	better(&b.up, up)
	better(&b.upCPU, processCPU()-cpu)
	dst := filepath.Join(e.dir, "down.bin")
	cpu = processCPU()
	down, err := timed(func() error { return downloadFile(ctx, e, dst) })
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	downCPU := processCPU() - cpu
	if err := checkFile(dst, sum); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	better(&b.down, down)
	better(&b.downCPU, downCPU)
	os.Remove(dst)
	os.Remove(filepath.Join(e.root, "up.bin"))
	if os.Getenv("OUTPOST_BENCH_NOSCP") != "" {
		b.scpErr = errors.New("OUTPOST_BENCH_NOSCP is set")
	}
	if b.scpErr == nil {
		var su, sd time.Duration
		if su, sd, b.scpErr = scpBaseline(ctx, src); b.scpErr == nil {
			better(&b.scpUp, su)
			better(&b.scpDown, sd)
		}
	}
	return nil
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// makeFile writes n pseudo-random bytes to name, streaming, and returns
// their hex SHA-256.
func makeFile(name string, n int64) (string, error) {
	f, err := os.Create(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(7, 11))
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	buf := make([]byte, 1<<20)
	for done := int64(0); done < n; done += int64(len(buf)) {
		for i := 0; i < len(buf); i += 8 {
			v := r.Uint64()
			for j := range 8 {
				buf[i+j] = byte(v >> (8 * j))
			}
		}
		if _, err := w.Write(buf); err != nil {
			return "", err
		}
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), f.Sync()
}

func uploadFile(ctx context.Context, e *env, src, sum string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := e.cl.Agent(e.ws, e.id).Put(ctx, "up.bin", f, benchFileSize, client.PutOptions{})
	if err != nil {
		return err
	}
	if res.SHA256 != sum {
		return fmt.Errorf("sha256 %s, sent %s", res.SHA256, sum)
	}
	return nil
}

func downloadFile(ctx context.Context, e *env, dst string) error {
	f, err := e.cl.Agent(e.ws, e.id).Get(ctx, "up.bin")
	if err != nil {
		return err
	}
	defer f.Body.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	// The client writes the file in 256 KiB writes, not io.Copy's 32 KiB:
	// on this VM small writes to the page cache cost the client (which
	// shares the two cores with what it measures) 5 s of CPU a GiB.
	w := bufio.NewWriterSize(out, 256<<10)
	if _, err := io.Copy(w, f.Body); err != nil {
		return err
	}
	return w.Flush()
}

// checkFile compares the SHA-256 of name with sum. The download is checked
// after its clock stopped: scp's copy, its baseline, is not hashed either.
func checkFile(name, sum string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 256<<10)); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("sha256 %s, want %s", got, sum)
	}
	return nil
}

// rawNATSRequests sends n bytes as rawChunk requests, rawWindow in flight, to a
// responder that acknowledges each, on a plain embedded nats-server: the
// ceiling of any transfer over NATS request/reply on this machine.
func rawNATSRequests(n int64) (time.Duration, error) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: natsPayload})
	if err != nil {
		return 0, err
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		return 0, errors.New("nats-server not ready")
	}
	srv, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	if _, err := srv.Subscribe("raw", func(m *nats.Msg) { m.Respond([]byte("ok")) }); err != nil {
		return 0, err
	}
	srv.Flush()
	cl, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	chunk := make([]byte, rawChunk)
	sem := make(chan struct{}, rawWindow)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for sent := int64(0); sent < n; sent += rawChunk {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := cl.Request("raw", chunk, 30*time.Second); err != nil {
				mu.Lock()
				firstErr = cmp(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// scpBaseline copies src to the loopback sshd and back with scp.
func scpBaseline(ctx context.Context, src string) (up, down time.Duration, err error) {
	if _, err := exec.LookPath("scp"); err != nil {
		return 0, 0, errors.New("no scp")
	}
	cfg, err := sshPeer(ctx)
	if err != nil {
		return 0, 0, err
	}
	scp := func(args ...string) error {
		b, err := exec.CommandContext(ctx, "scp", append([]string{"-q", "-F", cfg}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("scp %v: %v: %s", args, err, b)
		}
		return nil
	}
	if up, err = timed(func() error { return scp(src, "peer:outpost-bench.bin") }); err != nil {
		return 0, 0, err
	}
	back := src + ".scp"
	defer os.Remove(back)
	if down, err = timed(func() error { return scp("peer:outpost-bench.bin", back) }); err != nil {
		return 0, 0, err
	}
	exec.CommandContext(ctx, "ssh", "-F", cfg, "peer", "rm", "-f", "outpost-bench.bin").Run()
	return up, down, nil
}

package fleet

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/testbed/testpg"
)

// workerEnv makes the test binary a worker process (see runWorkerProcess)
// instead of running tests: the end-to-end tests need real processes to
// kill.
const workerEnv = "LPMBISECT_FLEET_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeQEMUEnv) == "1" {
		os.Exit(fakeQEMU(os.Args[1:]))
	}
	if cfg := os.Getenv(workerEnv); cfg != "" {
		os.Exit(runWorkerProcess(cfg))
	}
	code := testpg.Main(m)
	if kernelCache.dir != "" {
		os.RemoveAll(kernelCache.dir)
	}
	os.Exit(code)
}

// workerConfig is what a worker process is started with.
type workerConfig struct {
	URL, Name, CacheDir, Guest, QEMU string
	Queues                           []string
	Slots                            int
	Heartbeat                        time.Duration
	Trees                            map[string]Tree
	Builds                           map[string]BuildConfig
}

func (c workerConfig) worker() Worker {
	return Worker{URL: c.URL, Name: c.Name, Queues: c.Queues, CacheDir: c.CacheDir, Guest: c.Guest, QEMU: c.QEMU,
		Slots: c.Slots, Heartbeat: c.Heartbeat, Trees: c.Trees, Builds: c.Builds}
}

// runWorkerProcess runs a Worker configured by JSON until SIGTERM, logging
// to stderr and printing "ready" on stdout once it works its queues.
func runWorkerProcess(js string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		return 2
	}
	w := cfg.worker()
	w.Log = log.New(os.Stderr, "", log.Lmicroseconds)
	w.Ready = func(WorkerHost) { fmt.Println("ready") }
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker process:", err)
		return 1
	}
	return 0
}

// workerProcess is a worker running in a child process.
type workerProcess struct {
	name string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

// startWorker starts a worker process and waits until it is ready.
func startWorker(t *testing.T, w workerConfig) *workerProcess {
	t.Helper()
	cfg, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(cfg))
	p := &workerProcess{name: w.Name, cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = io.MultiWriter(p.logs, prefixWriter(t, w.Name))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker %s: %v", w.Name, err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if sc.Text() == "ready" && !ok {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("worker %s exited before it was ready:\n%s", w.Name, p.logs)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("worker %s not ready within 2 minutes:\n%s", w.Name, p.logs)
	}
	return p
}

// stop ends the worker with SIGTERM and waits for it.
func (p *workerProcess) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends the worker with SIGKILL, as the OOM killer or a power cut
// would, and waits until it is gone.
func (p *workerProcess) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// prefixWriter passes lines to t.Log when -v asks for them.
func prefixWriter(t *testing.T, prefix string) io.Writer {
	if !testing.Verbose() {
		return io.Discard
	}
	return &lineLogger{t: t, prefix: prefix}
}

type lineLogger struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	rest   string
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(l.rest+string(p), "\n")
	l.rest = lines[len(lines)-1]
	for _, line := range lines[:len(lines)-1] {
		fmt.Fprintf(os.Stderr, "%s: %s\n", l.prefix, line)
	}
	return len(p), nil
}

// testLogger returns a logger into a buffer (and to stderr under -v).
func testLogger(t *testing.T, name string) (*log.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return log.New(io.MultiWriter(buf, prefixWriter(t, name)), "", 0), buf
}

// migrated returns a fresh, migrated fleet database.
func migrated(t *testing.T) string {
	t.Helper()
	url := testpg.Shared(t)
	if _, err := Migrate(context.Background(), url); err != nil {
		t.Fatalf("Migrate = %v", err)
	}
	captureJobArgs(t, url)
	return url
}

// captureArgsEnv names a directory into which each test writes the
// arguments of the jobs it queued, as River stored them, in FuzzJobArgs's
// corpus format: the seeds testdata/fuzz/FuzzJobArgs/real-* were captured
// so, and a change of the arguments' format recaptures them with
//
//	LPMBISECT_FLEET_CAPTURE_ARGS=$PWD/fleet/testdata/fuzz/FuzzJobArgs go test -run 'TestRoundJobs|TestIcountHostClass|TestBuildJobs' ./fleet
const captureArgsEnv = "LPMBISECT_FLEET_CAPTURE_ARGS"

func captureJobArgs(t *testing.T, url string) {
	dir := os.Getenv(captureArgsEnv)
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		ctx := context.Background()
		db, err := open(ctx, url)
		if err != nil {
			t.Errorf("capture job arguments: %v", err)
			return
		}
		defer db.close()
		rows, err := db.pool.Query(ctx, "SELECT kind, args::text FROM river_job ORDER BY id")
		if err != nil {
			t.Errorf("capture job arguments: %v", err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var kind, args string
			if err := rows.Scan(&kind, &args); err != nil {
				t.Errorf("capture job arguments: %v", err)
				return
			}
			// FuzzJobArgs's kind: 0 boot, 1 round, 2 build.
			n := map[string]byte{KindBoot: 0, kindRound: 1, kindBuild: 2}[kind]
			sum := sha256.Sum256([]byte(args))
			name := fmt.Sprintf("real-%s-%x", strings.TrimPrefix(kind, "lpmbisect."), sum[:4])
			data := fmt.Sprintf("go test fuzz v1\nbyte(%q)\n[]byte(%q)\n", n, args)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Errorf("capture job arguments: %v", err)
			}
		}
	})
}

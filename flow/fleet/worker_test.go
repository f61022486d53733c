package fleet

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/testbed/testqemu"
	"github.com/lpmbisect/lpmbisect/wire"
)

// needQEMU skips (fails under LPMBISECT_REQUIRE_VM=1) without QEMU.
func needQEMU(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testkernels.Unavailable(t, "qemu-system-x86_64 not installed (run scripts/setup)")
	}
}

// runWorker runs w in this process until the test ends and returns once
// it works its queues.
func runWorker(t *testing.T, w Worker) WorkerHost {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan WorkerHost, 1)
	w.Ready = func(h WorkerHost) { ready <- h }
	ended := make(chan error, 1)
	go func() { ended <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("Worker.Run = %v", err)
		}
	})
	select {
	case h := <-ready:
		return h
	case err := <-ended:
		t.Fatalf("Worker.Run = %v before it was ready", err)
	case <-time.After(time.Minute):
		t.Fatal("worker not ready within a minute")
	}
	return WorkerHost{}
}

// waitFinal waits until job id is cancelled, discarded or completed.
func waitFinal(t *testing.T, c *Client, id int64) *jobState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		states, err := c.pollJobs(context.Background(), []int64{id}, "lpmbisect_fleet_boot_results")
		if err != nil {
			t.Fatal(err)
		}
		if s := states[id]; s != nil && (s.state == rivertype.JobStateCancelled || s.state == rivertype.JobStateDiscarded || s.state == rivertype.JobStateCompleted) {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("job %d not finished within a minute", id)
	return nil
}

// bogusArgs is a job kind no lpmbisect knows.
type bogusArgs struct{}

func (bogusArgs) Kind() string { return "lpmbisect.bogus" }

// rawArgs is a boot job whose arguments are whatever JSON it holds.
type rawArgs string

func (rawArgs) Kind() string                   { return KindBoot }
func (r rawArgs) MarshalJSON() ([]byte, error) { return []byte(r), nil }

func TestWorkerRefusesBadJobs(t *testing.T) {
	needQEMU(t)
	ctx := context.Background()
	location := migrated(t)
	u, _ := url.Parse(location)
	password, _ := u.User.Password()

	dir := t.TempDir()
	guest := filepath.Join(dir, "guest")
	os.WriteFile(guest, []byte("a guest of this lpmbisect"), 0o755)
	guestSHA, _ := cachefile.SHA256(guest)
	wlog, wlogs := testLogger(t, "worker")
	host := runWorker(t, Worker{URL: location, Name: "refuser", Queues: []string{"icount", "kvm-zen4", "build"},
		CacheDir: filepath.Join(dir, "cache"), Guest: guest, Log: wlog, Heartbeat: time.Second, KVMDevice: testqemu.Device(t)})
	if want := []string{"icount"}; strings.Join(host.Queues, ",") != "icount" {
		t.Errorf("worker queues = %v; want %v (kvm-zen4 cannot be probed without a kernel, build has no configuration)", host.Queues, want)
	}
	for _, want := range []string{"queue dropped queue=kvm-zen4 why=", "no kernel to probe it with", "queue dropped queue=build why=\"no build configurations\""} {
		if !strings.Contains(wlogs.String(), want) {
			t.Errorf("worker log lacks %q:\n%s", want, wlogs)
		}
	}

	clog, clogs := testLogger(t, "client")
	c, err := connect(ctx, location, clog)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// A blob whose content no longer hashes to its name.
	img := filepath.Join(dir, "bzImage")
	os.WriteFile(img, []byte(strings.Repeat("kernel ", 1000)), 0o644)
	imgSHA, err := c.PutBlob(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	c.db.pool.Exec(ctx, "UPDATE lpmbisect_fleet_blob_chunks SET data = set_byte(data, 0, 75) WHERE sha256 = $1", imgSHA)

	good := func() bootArgs {
		a := validBoot()
		a.Guest, a.Class = guestSHA, host.Class()
		return a
	}
	for _, tc := range []struct {
		name string
		args river.JobArgs
		want string
	}{
		{"unknown kind", bogusArgs{}, "lpmbisect.bogus"},
		{"undecodable", rawArgs(`{"v": "one"}`), "cannot unmarshal"},
		{"another version", func() bootArgs { a := good(); a.Version = 2; return a }(), "version 2, this lpmbisect reads 1"},
		{"guest of another lpmbisect", func() bootArgs { a := good(); a.Guest = sumB; return a }(), "guest binary differs from this worker's"},
		{"accel not the queue's", func() bootArgs { a := good(); a.Accel = wire.AccelTCG; a.Class = HostClass{}; return a }(), "a tcg boot on queue icount"},
		{"blob that does not match", func() bootArgs { a := good(); a.Boot.Kernel = imgSHA; return a }(), "blob content does not match its SHA-256"},
		{"blob that is missing", func() bootArgs { a := good(); a.Boot.Kernel = sumB; return a }(), "blob not in the fleet database"},
		{"build on a boot queue", buildArgs{Version: argsVersion, Tree: "t", Config: "c", Commit: strings.Repeat("ab", 20), StuckAfterMS: 60_000}, "a build on queue icount"},
	} {
		ins, err := c.river.Insert(ctx, tc.args, &river.InsertOpts{Queue: "icount"})
		if err != nil {
			t.Fatalf("%s: insert: %v", tc.name, err)
		}
		s := waitFinal(t, c, ins.Job.ID)
		if s.state != rivertype.JobStateCancelled || !strings.Contains(s.lastError, tc.want) {
			t.Errorf("%s: job ended %s with %q; want cancelled with %q", tc.name, s.state, s.lastError, tc.want)
		}
		if s.attempt != 1 {
			t.Errorf("%s: %d attempts; want 1 (a bad job is not retried)", tc.name, s.attempt)
		}
		if strings.Contains(s.lastError, password) {
			t.Errorf("%s: the job's error shows the database password: %s", tc.name, s.lastError)
		}
	}
	if !strings.Contains(wlogs.String(), "job refused") {
		t.Errorf("worker log has no refused job:\n%s", wlogs)
	}
	for name, logs := range map[string]string{"worker": wlogs.String(), "client": clogs.String()} {
		if strings.Contains(logs, password) {
			t.Errorf("%s log shows the database password:\n%s", name, logs)
		}
	}
	if !strings.Contains(wlogs.String(), "postgres://postgres:xxxxx@") {
		t.Errorf("worker log does not name the database with its password hidden:\n%s", wlogs)
	}

	// A wrong password is not shown either.
	u.User = url.UserPassword("postgres", "Wr0ng-s3cret")
	_, err = connect(ctx, u.String(), nil)
	if err == nil || strings.Contains(err.Error(), "Wr0ng-s3cret") {
		t.Errorf("Connect(wrong password) = %v; want an error without the password", err)
	}
	// A second live worker of the same name is refused.
	err = (&Worker{URL: location, Name: "refuser", Queues: []string{"icount"}, CacheDir: filepath.Join(dir, "cache2"), Guest: guest}).Run(ctx)
	if !errors.Is(err, ErrWorkerNameTaken) {
		t.Errorf("Run(second worker named refuser) = %v; want ErrWorkerNameTaken", err)
	}
}

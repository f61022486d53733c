package fleet

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/stats/sample"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// The small plan of the end-to-end tests: a few seconds per icount boot.
var e2ePlan = measure.GuestPlan{Bench: "LPMTrie/op=lookup/keys=random", Samples: 3, Entries: 1000, Rounds: 5}

const e2eBench = "LPMTrie/op=lookup/keys=random"

// e2eBoots is the boots per side of the end-to-end runs.
const e2eBoots = 3

// icountJitter is how far two boots' medians of one image may differ under
// icount (vmrunner: within 0.05 %).
const icountJitter = 0.0005

var kernelCache struct {
	once sync.Once
	dir  string
	err  error
}

// sharedCache is a cache directory the tests of this binary share, so the
// Debian packages are unpacked once.
func sharedCache(t *testing.T) string {
	kernelCache.once.Do(func() {
		if kernelCache.dir, kernelCache.err = os.MkdirTemp("", "lpmbisect-fleet-cache-"); kernelCache.err == nil {
			testkernels.ShareCache(t, kernelCache.dir)
		}
	})
	if kernelCache.err != nil {
		t.Fatal(kernelCache.err)
	}
	return kernelCache.dir
}

// e2eSetup sets up the two Debian kernels under icount with the small
// plan; start begins a measurement of them.
func e2eSetup(t *testing.T) (s *measure.Setup, start func(seed uint64) *measure.Runner) {
	t.Helper()
	needQEMU(t)
	debs := []string{testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612)}
	s, err := measure.NewSetup(measure.Options{Accel: wire.AccelIcount, Plan: e2ePlan, CacheDir: sharedCache(t),
		Guest: testguest.Path(t), RunDir: t.TempDir(), Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s, func(seed uint64) *measure.Runner {
		r, err := s.Start(debs, measure.RunOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// bootMedians returns the median of e2eBench in each completed boot of a
// side.
func bootMedians(t *testing.T, boots [][]*benchfmt.Result) []float64 {
	t.Helper()
	var out []float64
	for _, b := range boots {
		var vals []float64
		for _, r := range b {
			if strings.HasPrefix(string(r.Name), e2eBench) {
				for _, v := range r.Values {
					if v.Unit == "insn/op" {
						vals = append(vals, v.Value)
					}
				}
			}
		}
		if len(vals) == 0 {
			t.Fatalf("a boot without %s results", e2eBench)
		}
		out = append(out, sample.Median(vals))
	}
	return out
}

var localRun struct {
	once    sync.Once
	medians map[string][]float64
	took    time.Duration
}

// localMedians runs the plan here, two boots at once, once per test binary,
// and returns each side's boot medians.
func localMedians(t *testing.T, start func(uint64) *measure.Runner) map[string][]float64 {
	t.Helper()
	localRun.once.Do(func() {
		began := time.Now()
		r := start(1)
		if err := r.Measure(context.Background(), e2eBoots); err != nil {
			t.Fatalf("local Measure = %v", err)
		}
		localRun.took = time.Since(began)
		localRun.medians = map[string][]float64{}
		for _, side := range r.Sides {
			localRun.medians[side.Name] = bootMedians(t, r.Boots(side.Name))
		}
		t.Logf("local run (%d boots per side, 2 at once): %s; medians %v", e2eBoots, localRun.took.Round(100*time.Millisecond), localRun.medians)
	})
	if localRun.medians == nil {
		t.Fatal("the local run failed")
	}
	return localRun.medians
}

// checkMedians compares the remote run's boot medians with the local
// run's: every remote boot within the icount jitter of the local boots'
// median, per side.
func checkMedians(t *testing.T, r *measure.Runner, local map[string][]float64) {
	t.Helper()
	for side, want := range local {
		got := bootMedians(t, r.Boots(side))
		if len(got) != e2eBoots {
			t.Errorf("side %s: %d completed remote boots; want %d", side, len(got), e2eBoots)
		}
		ref := sample.Median(want)
		for i, m := range got {
			if d := math.Abs(m-ref) / ref; d > icountJitter {
				t.Errorf("side %s boot %d: remote median %.2f insn/op is %.3f%% from the local boots' %.2f; want within %.2f%%",
					side, i+1, m, 100*d, ref, 100*icountJitter)
			}
		}
		t.Logf("side %s: remote boot medians %v, local %v", side, got, want)
	}
}

// fleetFixture is a migrated database, workers and an executor.
type fleetFixture struct {
	url     string
	client  *Client
	workers map[string]*workerProcess
	caches  map[string]string
	logs    *syncBuffer
}

func startFleet(t *testing.T, names []string, slots int) *fleetFixture {
	t.Helper()
	f := &fleetFixture{url: migrated(t), workers: map[string]*workerProcess{}, caches: map[string]string{}}
	guest := testguest.Path(t)
	for _, name := range names {
		f.caches[name] = filepath.Join(t.TempDir(), name)
		f.workers[name] = startWorker(t, workerConfig{URL: f.url, Name: name, Queues: []string{"icount"}, CacheDir: f.caches[name],
			Guest: guest, Slots: slots, Heartbeat: time.Second})
	}
	lg, logs := testLogger(t, "client")
	f.logs = logs
	c, err := connect(context.Background(), f.url, lg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.client = c
	return f
}

// perWorker counts the stored boot results by worker.
func (f *fleetFixture) perWorker(t *testing.T) map[string]int {
	t.Helper()
	rows, err := f.client.db.pool.Query(context.Background(), "SELECT worker, count(*) FROM lpmbisect_fleet_boot_results GROUP BY worker")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var w string
		var n int
		rows.Scan(&w, &n)
		out[w] = n
	}
	return out
}

// resultsPerJob checks that every boot job has exactly one stored result
// and returns how many jobs there are.
func (f *fleetFixture) resultsPerJob(t *testing.T) int {
	t.Helper()
	rows, err := f.client.db.pool.Query(context.Background(), `
SELECT j.id, j.attempt, count(r.job_id) FROM river_job j LEFT JOIN lpmbisect_fleet_boot_results r ON r.job_id = j.id
WHERE j.kind = $1 GROUP BY j.id, j.attempt ORDER BY j.id`, KindBoot)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	jobs := 0
	for rows.Next() {
		var id int64
		var attempt, n int
		rows.Scan(&id, &attempt, &n)
		jobs++
		if n != 1 {
			t.Errorf("job %d (%d attempts): %d stored results; want exactly 1", id, attempt, n)
		}
	}
	return jobs
}

// logStats logs the queue's overhead per job: from the moment a job could
// start (inserted while a slot of its worker was free, or when a slot was
// freed by the previous job's stored result) until it started,
// and from its result's commit until the client had read it. slots is the
// slots of each worker.
func logStats(t *testing.T, e *Executor, slots int) (handoff, delivery time.Duration) {
	t.Helper()
	stats := e.Stats()
	sort.Slice(stats, func(i, j int) bool { return stats[i].Started.Before(stats[j].Started) })
	var waits, delivered []float64
	free := map[string][]time.Time{} // when each slot of each worker became free
	for _, s := range stats {
		delivered = append(delivered, float64(s.Delivery))
		if s.Attempt != 1 {
			continue
		}
		if free[s.Worker] == nil {
			free[s.Worker] = make([]time.Time, slots)
		}
		// It could start once a slot was free: the one freed first.
		slot := -1
		for i, f := range free[s.Worker] {
			if !f.After(s.Started) && (slot < 0 || f.Before(free[s.Worker][slot])) {
				slot = i
			}
		}
		from := s.Inserted
		if slot >= 0 {
			if f := free[s.Worker][slot]; f.After(from) {
				from = f
			}
			free[s.Worker][slot] = s.Stored
		}
		waits = append(waits, float64(s.Started.Sub(from)))
	}
	if len(waits) == 0 {
		return 0, 0
	}
	handoff, delivery = time.Duration(sample.Median(waits)), time.Duration(sample.Median(delivered))
	t.Logf("queue overhead per job: could start to started median %v (max %v) over %d first attempts; stored to read by the client median %v (max %v) over %d jobs",
		handoff.Round(time.Millisecond), time.Duration(slices.Max(waits)).Round(time.Millisecond), len(waits),
		delivery.Round(time.Millisecond), time.Duration(slices.Max(delivered)).Round(time.Millisecond), len(delivered))
	return handoff, delivery
}

// libraryE2E skips the package's own boot-heavy end-to-end tests unless
// LPMBISECT_FLEET_MEASURE=1: the CLI's TestFleetCompare shows the same
// through real lpmbisect worker processes (remote boots match local ones,
// spread over two workers, a worker killed mid-boot), and CI's time is
// better spent once.
func libraryE2E(t *testing.T) {
	t.Helper()
	if os.Getenv("LPMBISECT_FLEET_MEASURE") != "1" {
		t.Skip("shown by cmd/lpmbisect's TestFleetCompare; set LPMBISECT_FLEET_MEASURE=1 to run it here too")
	}
}

func TestRemoteBootsMatchLocal(t *testing.T) {
	libraryE2E(t)
	s, startRun := e2eSetup(t)
	local := localMedians(t, startRun)
	f := startFleet(t, []string{"w1", "w2"}, 1)
	ex := &Executor{Client: f.client, Queue: "icount", Guest: s.Guest, Log: f.client.log, StuckAfter: 2 * time.Minute}
	r := startRun(1)
	r.Exec = ex
	start := time.Now()
	if err := r.Measure(context.Background(), e2eBoots); err != nil {
		t.Fatalf("remote Measure = %v", err)
	}
	t.Logf("remote run (%d boots per side, workers w1 and w2 of one slot each): %s", e2eBoots, time.Since(start).Round(100*time.Millisecond))
	checkMedians(t, r, local)
	per := f.perWorker(t)
	t.Logf("boots per worker: %v", per)
	if per["w1"] == 0 || per["w2"] == 0 || per["w1"]+per["w2"] != 2*e2eBoots {
		t.Errorf("boots per worker = %v; want %d spread over w1 and w2", per, 2*e2eBoots)
	}
	if n := f.resultsPerJob(t); n != 2*e2eBoots {
		t.Errorf("%d boot jobs; want %d", n, 2*e2eBoots)
	}
	logStats(t, ex, 1)
	for _, want := range []string{"job start job=", "worker=w1", "worker=w2", "boot done job="} {
		if !strings.Contains(f.logs.String(), want) {
			t.Errorf("client log lacks %q:\n%s", want, f.logs)
		}
	}
	// Every boot's capture is in its local run directory.
	for _, side := range r.Sides {
		for boot := 1; boot <= e2eBoots; boot++ {
			dir := filepath.Join(s.RunDir, fmt.Sprintf("%s-%02d", side.Name, boot))
			for _, name := range []string{"console.log", "results.out", "worker.txt"} {
				if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
					t.Errorf("%s/%s: %v (size %v); want the boot's file", dir, name, err, st)
				}
			}
		}
	}

	st, err := f.client.Status(context.Background())
	if err != nil {
		t.Fatalf("Status = %v", err)
	}
	var text strings.Builder
	if err := st.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("fleet status:\n%s", text.String())
	if len(st.Workers) != 2 || !st.Workers[0].Alive || !st.Workers[1].Alive {
		t.Errorf("Status workers = %+v; want w1 and w2 alive", st.Workers)
	}
}

func TestWorkerKilledMidBoot(t *testing.T) {
	libraryE2E(t)
	s, startRun := e2eSetup(t)
	local := localMedians(t, startRun)
	f := startFleet(t, []string{"w1", "w2"}, 1)
	// River's rescuer would take the default stuck time (10 minutes):
	// the killed job comes back by the hand-back, after three missed
	// heartbeats (startFleet's workers beat every second).
	ex := &Executor{Client: f.client, Queue: "icount", Guest: s.Guest, Log: f.client.log, PollInterval: time.Second}
	r := startRun(2)
	r.Exec = ex
	measured := make(chan error, 1)
	start := time.Now()
	go func() { measured <- r.Measure(context.Background(), e2eBoots) }()

	// Kill w1 two seconds into a boot of its own.
	var killedJob int64
	deadline := time.Now().Add(2 * time.Minute)
	for killedJob == 0 && time.Now().Before(deadline) {
		f.client.db.pool.QueryRow(context.Background(), `
SELECT id FROM river_job WHERE state = 'running' AND split_part(attempted_by[array_upper(attempted_by, 1)], '/', 1) = 'w1'
	AND attempted_at < now() - interval '2 seconds' LIMIT 1`).Scan(&killedJob)
		time.Sleep(200 * time.Millisecond)
	}
	if killedJob == 0 {
		t.Fatal("w1 ran no boot within 2 minutes")
	}
	qemus := func() string {
		out, _ := exec.Command("pgrep", "-a", "-f", f.caches["w1"]).Output()
		return strings.TrimSpace(string(out))
	}
	if q := qemus(); !strings.Contains(q, "qemu") {
		t.Fatalf("no QEMU of w1 runs while it works job %d (pgrep: %q)", killedJob, q)
	}
	f.workers["w1"].kill()
	t.Logf("killed w1 during job %d, %s into the run", killedJob, time.Since(start).Round(100*time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	if q := qemus(); q != "" {
		t.Errorf("QEMU of the killed worker left behind:\n%s", q)
	}

	select {
	case err := <-measured:
		if err != nil {
			t.Fatalf("remote Measure with a killed worker = %v", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("remote Measure did not finish after the kill")
	}
	t.Logf("remote run with w1 killed: %s", time.Since(start).Round(100*time.Millisecond))
	checkMedians(t, r, local)
	if n := f.resultsPerJob(t); n != 2*e2eBoots {
		t.Errorf("%d boot jobs; want %d", n, 2*e2eBoots)
	}
	var attempt int
	var worker, errs string
	f.client.db.pool.QueryRow(context.Background(), `
SELECT r.attempt, r.worker, array_to_string(ARRAY(SELECT e->>'error' FROM unnest(j.errors) e), '; ')
FROM lpmbisect_fleet_boot_results r JOIN river_job j ON j.id = r.job_id WHERE r.job_id = $1`, killedJob).Scan(&attempt, &worker, &errs)
	t.Logf("job %d: result of attempt %d on %s; errors: %s", killedJob, attempt, worker, errs)
	if attempt < 2 || worker != "w2" || !strings.Contains(errs, "worker w1 stopped answering at ") || strings.Contains(errs, "Stuck job rescued") {
		t.Errorf("job %d: result of attempt %d on %s, errors %q; want a later attempt on w2 after a hand-back from w1", killedJob, attempt, worker, errs)
	}
	if !strings.Contains(f.logs.String(), "worker w1 stopped answering at ") {
		t.Errorf("client log does not say w1 stopped answering:\n%s", f.logs)
	}
	t.Logf("boots per worker: %v", f.perWorker(t))
}

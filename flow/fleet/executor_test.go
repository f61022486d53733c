package fleet

import (
	"context"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestReadDoesNotTrustTheWorker stores boot rows as a worker (or anything
// that writes the database) could, and reads them back as the client:
// an outcome this lpmbisect does not know is an error, and "ok" over
// results that are not a complete stream is a corrupt boot, not samples.
func TestReadDoesNotTrustTheWorker(t *testing.T) {
	ctx := context.Background()
	c, err := connect(ctx, migrated(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := &Executor{Client: c, Queue: "tcg", queue: Queue{Name: "tcg", Accel: wire.AccelTCG}}
	store := func(job int64, outcome, results string) {
		t.Helper()
		if _, err := c.db.pool.Exec(ctx, `
INSERT INTO lpmbisect_fleet_boot_results (job_id, attempt, boot, worker, run, side, side_boot, pair, outcome, detail,
	channel, accel, qemu_version, cpu_model, duration_ns, command, results, console, started_at)
VALUES ($1, 1, 0, 'w1', 'r', 'A', 1, 0, $2, '', 'virtio', 'tcg', '7.2.22', 'Westmere-v1', 1, '{}', $3, '', now())`,
			job, outcome, []byte(results)); err != nil {
			t.Fatal(err)
		}
	}
	pending := func(job int64) *pendingJob {
		return &pendingJob{id: job, jobs: []measure.Job{{Boot: 1, Config: vmrunner.Config{RunDir: t.TempDir()}}}}
	}

	store(1, "great", "")
	if _, _, err := e.read(ctx, pending(1)); err == nil || !strings.Contains(err.Error(), `stored outcome "great"`) {
		t.Errorf("read of an unknown outcome = %v; want an error naming it", err)
	}
	store(2, string(vmrunner.OK), "BenchmarkX 1 5 ns/op\n")
	res, _, err := e.read(ctx, pending(2))
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Outcome != vmrunner.Corrupt || !strings.Contains(r.Detail, "reported the boot ok") {
		t.Errorf("read of ok over an incomplete stream = %s (%s); want corrupt, saying so", r.Outcome, r.Detail)
	}
}

package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/ab"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// TestFleetScaling measures an icount compare of Debian 6.1 against 6.12
// (the small plan, 4 boots a side) run here and on fleets of one and two
// workers, and the queue's overhead per job. It takes minutes, so it runs
// only with LPMBISECT_FLEET_MEASURE=1.
func TestFleetScaling(t *testing.T) {
	if os.Getenv("LPMBISECT_FLEET_MEASURE") != "1" {
		t.Skip("a measurement: set LPMBISECT_FLEET_MEASURE=1")
	}
	s, _ := e2eSetup(t)
	kernels := [2]string{testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612)}
	const boots = 4
	run := func(name string, hook func(*measure.Runner)) (*ab.Result, time.Duration) {
		start := time.Now()
		res, err := ab.Run(context.Background(), ab.Options{Setup: s, Kernels: kernels, Start: boots, Seed: 1,
			Results: filepath.Join(t.TempDir(), "results.txt"), OnRunner: hook})
		if err != nil {
			t.Fatalf("%s: ab.Run = %v", name, err)
		}
		return res, time.Since(start)
	}
	// The verdicts must agree; the deltas may differ in the last digit
	// by the icount jitter, so they are shown, not compared.
	verdicts := func(r *compare.Report) (string, string) {
		var v, d []string
		for _, row := range r.Rows {
			v = append(v, fmt.Sprintf("%s %s", row.Benchmark, row.Verdict))
			d = append(d, fmt.Sprintf("%+.3f%%", row.DeltaPct))
		}
		return strings.Join(v, "; "), strings.Join(d, " ")
	}
	local, took := run("local", nil)
	want, deltas := verdicts(local.Report)
	t.Logf("local, 2 boots at once: %s; %s (%s)", took.Round(100*time.Millisecond), want, deltas)
	for _, fleet := range []struct {
		name    string
		workers []string
		slots   int
	}{
		{"1 worker, 1 slot", []string{"w1"}, 1},
		{"1 worker, 2 slots", []string{"w1"}, 2},
		{"2 workers, 1 slot each", []string{"w1", "w2"}, 1},
	} {
		f := startFleet(t, fleet.workers, fleet.slots)
		ex := &Executor{Client: f.client, Queue: "icount", Guest: testguest.Path(t), Log: f.client.log}
		res, took := run(fleet.name, func(r *measure.Runner) { r.Exec = ex })
		got, deltas := verdicts(res.Report)
		t.Logf("%s: %s; boots per worker %v; %s (%s)", fleet.name, took.Round(100*time.Millisecond), f.perWorker(t), got, deltas)
		if got != want {
			t.Errorf("%s: verdicts %s; local %s", fleet.name, got, want)
		}
		logStats(t, ex, fleet.slots)
		for _, w := range f.workers {
			w.stop(t)
		}
	}
}

package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/host/initramfs"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/wire"
)

// fakeSides returns two sides whose fake kernels report 500 and 400 ns/op
// after boot.
func fakeSides(t *testing.T, boot time.Duration) []*measure.Side {
	t.Helper()
	initrd := filepath.Join(t.TempDir(), "initramfs.cpio")
	os.WriteFile(initrd, []byte("a fake initramfs"), 0o644)
	var sides []*measure.Side
	for i, v := range []float64{500, 400} {
		name := string(rune('A' + i))
		img := fakeKernel(t, "bzImage-"+name, v, boot)
		sum, _ := cachefile.SHA256(img)
		sides = append(sides, &measure.Side{Name: name, Label: "fake-" + name,
			Kernel: &kernel.Kernel{Input: img, Image: img, SHA256: sum}, Image: &initramfs.Image{Path: initrd}})
	}
	return sides
}

// fakeGuest is a guest binary for workers and clients that boot fake
// kernels: only its hash matters.
func fakeGuest(t *testing.T) string {
	t.Helper()
	g := filepath.Join(t.TempDir(), "guest")
	os.WriteFile(g, []byte("the guest of the fake boots"), 0o755)
	return g
}

func fakeRunner(t *testing.T, sides []*measure.Side, exec measure.Executor, paired bool) *measure.Runner {
	return &measure.Runner{Sides: sides, Seed: 7, GuestArgs: []string{"lpmbisect.samples=1"},
		VM: vmrunner.Config{Accel: wire.AccelTCG, BootDeadline: 30 * time.Second, ProgressDeadline: 30 * time.Second}, RunDir: t.TempDir(), Exec: exec, Paired: paired}
}

// TestRoundJobs runs wall-clock comparisons on two workers: unpaired (A and
// B of each round one after the other) and paired (side by side, paced),
// and checks that the boots of each round ran on one worker.
func TestRoundJobs(t *testing.T) {
	ctx := context.Background()
	url := migrated(t)
	qemu, guest := fakeQEMUPath(t), fakeGuest(t)
	for _, name := range []string{"tcg1", "tcg2"} {
		lg, _ := testLogger(t, name)
		runWorker(t, Worker{URL: url, Name: name, Queues: []string{"tcg-fake"}, CacheDir: filepath.Join(t.TempDir(), name),
			Guest: guest, QEMU: qemu, Log: lg, Heartbeat: time.Second})
	}
	lg, logs := testLogger(t, "client")
	c, err := connect(ctx, url, lg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sides := fakeSides(t, 200*time.Millisecond)

	for _, paired := range []bool{false, true} {
		ex := &Executor{Client: c, Queue: "tcg-fake", Guest: guest, Log: lg, Seed: 7, PollInterval: 500 * time.Millisecond}
		r := fakeRunner(t, sides, ex, paired)
		if err := r.Measure(ctx, 3); err != nil {
			t.Fatalf("Measure(paired %v) = %v\n%s", paired, err, logs)
		}
		sum := r.Summary()
		if sum.OK["A"] != 3 || sum.OK["B"] != 3 || paired && sum.Pairs != 3 {
			t.Errorf("paired %v: completed boots %v, pairs %d; want 3 each (and 3 pairs when paired)", paired, sum.OK, sum.Pairs)
		}
		for _, side := range sides {
			want := map[string]float64{"A": 500, "B": 400}[side.Name]
			for _, b := range r.Boots(side.Name) {
				if len(b) != 1 || b[0].Values[0].OrigValue != want {
					t.Errorf("paired %v: side %s boot results %v; want one of %g ns/op", paired, side.Name, b, want)
				}
			}
		}
		stats := ex.Stats()
		if len(stats) != 3 {
			t.Errorf("paired %v: %d jobs; want 3 round jobs", paired, len(stats))
		}
		for _, s := range stats {
			if s.Kind != kindRound || s.Boots != 2 {
				t.Errorf("paired %v: job %d is a %s of %d boots; want a round of 2", paired, s.ID, s.Kind, s.Boots)
			}
		}
	}
	// Every round's boots ran on one worker.
	rows, err := c.db.pool.Query(ctx, "SELECT job_id, count(DISTINCT worker), count(*) FROM lpmbisect_fleet_boot_results GROUP BY job_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var workers, boots int
		rows.Scan(&id, &workers, &boots)
		if workers != 1 || boots != 2 {
			t.Errorf("round job %d: %d boots on %d workers; want 2 on 1", id, boots, workers)
		}
	}
	if !strings.Contains(logs.String(), "worker=tcg") {
		t.Errorf("client log names no worker:\n%s", logs)
	}
}

func TestExecutorGroupsRounds(t *testing.T) {
	a, b := &measure.Side{Name: "A"}, &measure.Side{Name: "B"}
	job := func(s *measure.Side, boot, pair int) measure.Job { return measure.Job{Side: s, Boot: boot, Pair: pair} }
	for _, tc := range []struct {
		name  string
		queue string
		jobs  []measure.Job
		want  [][]int
	}{
		{"icount: a job per boot", "icount", []measure.Job{job(a, 1, 0), job(b, 1, 0), job(b, 2, 0)}, [][]int{{0}, {1}, {2}}},
		{"rounds of A and B", "tcg", []measure.Job{job(b, 1, 0), job(a, 1, 0), job(a, 2, 0), job(b, 2, 0), job(b, 3, 0)}, [][]int{{0, 1}, {2, 3}, {4}}},
		{"pairs", "kvm-zen4", []measure.Job{job(a, 1, 1), job(b, 1, 1), job(a, 2, 2), job(b, 2, 2)}, [][]int{{0, 1}, {2, 3}}},
	} {
		q, _ := parseQueue(tc.queue)
		e := &Executor{queue: q}
		got := e.group(tc.jobs)
		if !equalGroups(got, tc.want) {
			t.Errorf("%s: group = %v; want %v", tc.name, got, tc.want)
		}
	}
}

func equalGroups(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// TestIcountHostClass runs icount boots on a queue whose workers have two
// QEMU versions: a run names its class and only workers of that class run
// its boots; a run that names none is refused.
func TestIcountHostClass(t *testing.T) {
	ctx := context.Background()
	url := migrated(t)
	guest := fakeGuest(t)
	logs := map[string]*syncBuffer{}
	for name, version := range map[string]string{"old": "7.2.22", "new": "8.0.4"} {
		lg, buf := testLogger(t, name)
		logs[name] = buf
		runWorker(t, Worker{URL: url, Name: name, Queues: []string{"icount"}, CacheDir: filepath.Join(t.TempDir(), name),
			Guest: guest, QEMU: fakeQEMUVersion(t, version), Slots: 1, Log: lg, Heartbeat: time.Second})
	}
	c, err := connect(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sides := fakeSides(t, 100*time.Millisecond)
	icountRunner := func(ex *Executor) *measure.Runner {
		r := fakeRunner(t, sides, ex, false)
		r.VM.Accel = wire.AccelIcount
		return r
	}
	err = icountRunner(&Executor{Client: c, Queue: "icount", Guest: guest}).Measure(ctx, 1)
	if !errors.Is(err, ErrMixedClasses) {
		t.Errorf("Measure(no class, two classes on the queue) = %v; want ErrMixedClasses", err)
	}
	class := HostClass{QEMUVersion: "8.0.4", CPUModel: vmrunner.CPUModel(wire.AccelIcount)}
	ex := &Executor{Client: c, Queue: "icount", Guest: guest, Class: &class, PollInterval: 200 * time.Millisecond}
	if err := icountRunner(ex).Measure(ctx, 4); err != nil {
		t.Fatalf("Measure(class %s) = %v", class, err)
	}
	for _, s := range ex.Stats() {
		if s.Worker != "new" {
			t.Errorf("job %d ran on %s; want new, the only worker of %s", s.ID, s.Worker, class)
		}
	}
	if !strings.Contains(logs["old"].String(), "job for another host class") {
		t.Logf("old never fetched a job of the other class (possible when new was always faster)")
	}
	other := HostClass{QEMUVersion: "9.9.9", CPUModel: vmrunner.CPUModel(wire.AccelIcount)}
	err = icountRunner(&Executor{Client: c, Queue: "icount", Guest: guest, Class: &other}).Measure(ctx, 1)
	if !errors.Is(err, ErrNoWorkers) {
		t.Errorf("Measure(class nobody has) = %v; want ErrNoWorkers", err)
	}
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

func TestParseQueue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		accel     wire.Accel
		build     bool
		wallClock bool
	}{
		{"icount", wire.AccelIcount, false, false},
		{"icount-westmere", wire.AccelIcount, false, false},
		{"tcg", wire.AccelTCG, false, true},
		{"kvm-zen4", wire.AccelKVM, false, true},
		{"kvm-skylake_sp", wire.AccelKVM, false, true},
		{"build", "", true, false},
		{"build-big", "", true, false},
	} {
		q, err := parseQueue(tc.name)
		if err != nil {
			t.Errorf("ParseQueue(%q) = %v; want a queue", tc.name, err)
			continue
		}
		if q.Name != tc.name || q.Accel != tc.accel || q.Build() != tc.build || q.WallClock() != tc.wallClock {
			t.Errorf("ParseQueue(%q) = %+v (build %v, wall clock %v); want accel %q, build %v, wall clock %v",
				tc.name, q, q.Build(), q.WallClock(), tc.accel, tc.build, tc.wallClock)
		}
	}
	for _, bad := range []string{"", "auto", "zen4", "kvm_zen4", "KVM", "icount-", "-icount", "tcg--x", "kvm zen4",
		"kvm-" + string(make([]byte, 64))} {
		if q, err := parseQueue(bad); !errors.Is(err, ErrQueueName) {
			t.Errorf("ParseQueue(%q) = %+v, %v; want ErrQueueName", bad, q, err)
		}
	}
}

func TestParseQueues(t *testing.T) {
	names, build, err := ParseQueues(" icount, ,build-big,")
	if err != nil || !slices.Equal(names, []string{"icount", "build-big"}) || !build {
		t.Errorf("ParseQueues(icount, build-big) = %q, build %v, %v; want both, build", names, build, err)
	}
	if names, build, err := ParseQueues("tcg-zen4"); err != nil || build || len(names) != 1 {
		t.Errorf("ParseQueues(tcg-zen4) = %q, build %v, %v; want one boot queue", names, build, err)
	}
	if names, _, err := ParseQueues(""); err != nil || len(names) != 0 {
		t.Errorf("ParseQueues(\"\") = %q, %v; want none", names, err)
	}
	if _, _, err := ParseQueues("icount,gpu"); !errors.Is(err, ErrQueueName) {
		t.Errorf("ParseQueues(icount,gpu) = %v; want ErrQueueName", err)
	}
}

func TestParseTrees(t *testing.T) {
	trees, err := ParseTrees([]string{"linux=/src/linux", "next=rel"})
	abs, _ := filepath.Abs("rel")
	if err != nil || len(trees) != 2 || trees["linux"] != (Tree{Dir: "/src/linux", Remote: "origin"}) || trees["next"].Dir != abs {
		t.Errorf("ParseTrees = %+v, %v; want linux and next, absolute, fetched from origin", trees, err)
	}
	for _, bad := range []string{"linux", "=dir", "linux="} {
		if _, err := ParseTrees([]string{bad}); !errors.Is(err, ErrTreeSyntax) || !strings.HasPrefix(err.Error(), fmt.Sprintf("%q: ", bad)) {
			t.Errorf("ParseTrees(%q) = %v; want ErrTreeSyntax, the tree first", bad, err)
		}
	}
}

func TestWorkerCacheDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir, err := WorkerCacheDir("w1")
	if err != nil || filepath.Base(dir) != "worker-w1" {
		t.Errorf("WorkerCacheDir(w1) = %q, %v; want …/worker-w1", dir, err)
	}
	host, _ := os.Hostname()
	if dir, err := WorkerCacheDir(""); err != nil || filepath.Base(dir) != "worker-"+host {
		t.Errorf("WorkerCacheDir(\"\") = %q, %v; want …/worker-%s", dir, err, host)
	}
}

func TestCheckQueues(t *testing.T) {
	if q, err := CheckBootQueue("icount", wire.AccelIcount, minStuckAfter); err != nil || q.Name != "icount" {
		t.Errorf("CheckBootQueue(icount) = %+v, %v; want the queue", q, err)
	}
	var ae *AccelError
	for _, c := range []struct {
		name  string
		accel wire.Accel
		stuck time.Duration
		is    func(error) bool
		text  string
	}{
		{"gpu", wire.AccelIcount, time.Minute, func(err error) bool { return errors.Is(err, ErrQueueName) }, `queue "gpu": not a queue name`},
		{"build", wire.AccelIcount, time.Minute, func(err error) bool { return errors.Is(err, ErrBuildQueueForBoots) }, "build is a build queue"},
		{"icount", wire.AccelIcount, time.Second, func(err error) bool { return errors.Is(err, ErrStuckAfter) }, "1s: at least 5s"},
		{"kvm-zen4", wire.AccelTCG, time.Minute, func(err error) bool { return errors.As(err, &ae) && ae.Accel == wire.AccelTCG }, "queue kvm-zen4 boots under kvm"},
	} {
		if _, err := CheckBootQueue(c.name, c.accel, c.stuck); err == nil || !c.is(err) || !strings.HasPrefix(err.Error(), c.text) {
			t.Errorf("CheckBootQueue(%s, %s, %v) = %v; want %q", c.name, c.accel, c.stuck, err, c.text)
		}
	}
	if q, err := CheckBuildQueue("build-big"); err != nil || !q.Build() {
		t.Errorf("CheckBuildQueue(build-big) = %+v, %v; want the build queue", q, err)
	}
	if _, err := CheckBuildQueue("icount"); !errors.Is(err, ErrBootQueueForBuilds) || !strings.HasPrefix(err.Error(), "icount is a boot queue") {
		t.Errorf("CheckBuildQueue(icount) = %v; want ErrBootQueueForBuilds after the name", err)
	}
}

// TestResolveAccel checks that Auto on a fleet is the queue's accelerator,
// decided by the comparison before any job, whatever this host's /dev/kvm.
func TestResolveAccel(t *testing.T) {
	for _, c := range []struct {
		requested wire.Accel
		queue     string
		want      wire.Accel
		says      bool
	}{
		{wire.AccelAuto, "icount", wire.AccelIcount, true},
		{wire.AccelAuto, "kvm-zen4", wire.AccelKVM, true},
		{wire.AccelAuto, "tcg-slow", wire.AccelTCG, true},
		{wire.AccelTCG, "kvm-zen4", wire.AccelTCG, false}, // CheckBootQueue refuses it
	} {
		got, why, err := ResolveAccel(c.requested, c.queue)
		if err != nil || got != c.want || (why != "") != c.says {
			t.Errorf("ResolveAccel(%s, %s) = %s, %q, %v; want %s (a line: %v)", c.requested, c.queue, got, why, err, c.want, c.says)
		}
		if _, err := CheckBootQueue(c.queue, got, minStuckAfter); c.requested == wire.AccelAuto && err != nil {
			t.Errorf("CheckBootQueue(%s, ResolveAccel(auto)) = %v; want the queue", c.queue, err)
		}
	}
	for _, q := range []string{"build", "gpu"} {
		if a, _, err := ResolveAccel(wire.AccelAuto, q); err == nil {
			t.Errorf("ResolveAccel(auto, %s) = %s; want an error (no boot queue)", q, a)
		}
	}
}

// TestSpecRefusesOtherAccel checks the executor's last guard before a job
// is queued: a boot whose guest is told another accelerator than the
// queue's (a wall-time run sent to an icount queue, or the reverse) is
// refused before any blob is stored, so a queue never mixes units.
func TestSpecRefusesOtherAccel(t *testing.T) {
	for _, c := range []struct {
		queue string
		told  wire.Accel
	}{{"icount", wire.AccelTCG}, {"tcg", wire.AccelIcount}, {"kvm-zen4", wire.AccelIcount}} {
		q, err := parseQueue(c.queue)
		if err != nil {
			t.Fatal(err)
		}
		e := &Executor{Queue: c.queue, queue: q} // no client: a refused spec stores nothing
		j := measure.Job{Config: vmrunner.Config{KernelArgs: []string{"quiet", wire.ParamAccel.Arg(string(c.told))}}}
		if _, err := e.spec(context.Background(), j); !errors.Is(err, ErrAccelMismatch) {
			t.Errorf("spec(guest told %s) on queue %s = %v; want ErrAccelMismatch", c.told, c.queue, err)
		}
	}
}

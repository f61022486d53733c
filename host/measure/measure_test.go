package measure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/initramfs"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

func testSides() []*Side {
	var sides []*Side
	for i, name := range []string{"A", "B"} {
		sides = append(sides, &Side{
			Name:   name,
			Label:  fmt.Sprintf("6.%d.0-test", i+1),
			Kernel: &kernel.Kernel{Image: "/k/" + name, SHA256: strings.Repeat(name, 64)},
			Image:  &initramfs.Image{Path: "/i/" + name},
		})
	}
	return sides
}

// fakeBoot returns a complete stream with one result per boot, or the
// outcome fail says for the kernel image it is given.
func fakeBoot(log *[]string, fail map[string]vmrunner.Outcome) func(context.Context, vmrunner.Config) (*vmrunner.Result, error) {
	return func(_ context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
		*log = append(*log, cfg.Kernel[len("/k/"):])
		if o, ok := fail[cfg.Kernel]; ok {
			return &vmrunner.Result{Outcome: o, Detail: "fake failure", Stream: wire.Decode(nil), Accel: wire.AccelTCG}, nil
		}
		var b bytes.Buffer
		w := wire.NewWriter(&b)
		r := &benchfmt.Result{Name: []byte("LPMTrie/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: 100, Unit: "ns/op"}}}
		r.SetConfig(wire.KeyKernel, "guest-says")
		w.Result(r)
		w.End()
		return &vmrunner.Result{Outcome: vmrunner.OK, Stream: wire.Decode(b.Bytes()), Accel: wire.AccelTCG, Channel: "virtio"}, nil
	}
}

// runFake measures boots per side with a fake boot, one at a time.
func runFake(t *testing.T, r *Runner, boots int, fail map[string]vmrunner.Outcome) ([]string, []*benchfmt.Result, *Summary, error) {
	t.Helper()
	var log []string
	var out bytes.Buffer
	r.Sides, r.Exec, r.Sink, r.RunDir = testSides(), Local{Boot: fakeBoot(&log, fail)}, streamResults(&out), t.TempDir()
	err := r.Measure(context.Background(), boots)
	res, rerr := ReadResults(&out, "out")
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(res) != len(r.Results()) {
		t.Errorf("the results file holds %d results, the runner %d; want the same", len(res), len(r.Results()))
	}
	return log, res, r.Summary(), err
}

func TestRunInterleavesInSeededRandomOrder(t *testing.T) {
	orders := map[string]bool{}
	for seed := range uint64(8) {
		log, res, sum, err := runFake(t, &Runner{Seed: seed}, 6, nil)
		if err != nil || sum.OK["A"] != 6 || sum.OK["B"] != 6 {
			t.Fatalf("Run(seed %d) = %v, %v; want 6 boots per side", seed, sum.OK, err)
		}
		// Every round boots each side once.
		for i := 0; i < len(log); i += 2 {
			if log[i] == log[i+1] {
				t.Fatalf("Run(seed %d) order %v: round %d boots %s twice", seed, log, i/2, log[i])
			}
		}
		orders[strings.Join(log, "")] = true
		again, _, _, _ := runFake(t, &Runner{Seed: seed}, 6, nil)
		if strings.Join(again, "") != strings.Join(log, "") {
			t.Errorf("Run(seed %d) order %v then %v; want the same order for the same seed", seed, log, again)
		}
		if got := res[0].GetConfig(wire.KeyOrderSeed); got != fmt.Sprint(seed) {
			t.Errorf("results %s = %q; want %d", wire.KeyOrderSeed, got, seed)
		}
	}
	if len(orders) < 4 {
		t.Errorf("8 seeds gave %d distinct orders; want the order to depend on the seed", len(orders))
	}
}

func TestRunLabelsResults(t *testing.T) {
	_, res, _, err := runFake(t, &Runner{}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("got %d results; want 4", len(res))
	}
	for _, r := range res {
		side := r.GetConfig(wire.KeySide)
		want := map[string]string{"A": "6.1.0-test", "B": "6.2.0-test"}[side]
		if got := r.GetConfig(wire.KeyKernel); got != want {
			t.Errorf("side %s kernel = %q; want the host's label %q, not the guest's", side, got, want)
		}
		if r.GetConfig(wire.KeyBoot) == "" || r.GetConfig(wire.KeyImage) != strings.Repeat(side, 12) || r.GetConfig(wire.KeyAccel) != "tcg" {
			t.Errorf("result config %v lacks boot, image or accel", r.Config)
		}
	}
}

func TestMeasureBootsOnlyWhatIsMissing(t *testing.T) {
	var log []string
	r := &Runner{Sides: testSides(), Exec: Local{Boot: fakeBoot(&log, nil)}, RunDir: t.TempDir()}
	for _, n := range []int{4, 4, 6, 5} {
		if err := r.Measure(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if sum := r.Summary(); sum.OK["A"] != 6 || sum.OK["B"] != 6 || len(log) != 12 {
		t.Errorf("Measure(4, 4, 6, 5) = %v after %d boots; want 6 per side from 12 boots", sum.OK, len(log))
	}
	if got := len(r.Boots("A")); got != 6 {
		t.Errorf("Boots(A) has %d boots; want 6", got)
	}
}

func TestMeasureInParallel(t *testing.T) {
	var mu sync.Mutex
	var log []string
	running, most := 0, 0
	boot := fakeBoot(&log, nil)
	r := &Runner{Sides: testSides(), RunDir: t.TempDir(), Exec: Local{Workers: 3, Boot: func(ctx context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		running--
		return boot(ctx, cfg)
	}}}
	if err := r.Measure(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	if sum := r.Summary(); sum.OK["A"] != 4 || sum.OK["B"] != 4 || most != 3 {
		t.Errorf("Measure(4) with 3 workers = %v, at most %d at once; want 4 per side, 3 at once", sum.OK, most)
	}
	boots := map[string]bool{}
	for _, res := range r.Results() {
		boots[res.GetConfig(wire.KeySide)+res.GetConfig(wire.KeyBoot)] = true
	}
	if len(boots) != 8 {
		t.Errorf("results label %d distinct boots (%v); want 8", len(boots), boots)
	}
}

func TestWorkers(t *testing.T) {
	for _, tc := range []struct {
		accel     wire.Accel
		requested int
		want      int
		err       bool
	}{
		{wire.AccelIcount, 0, runtime.NumCPU(), false},
		{wire.AccelIcount, 3, 3, false},
		{wire.AccelTCG, 0, 1, false},
		{wire.AccelTCG, 1, 1, false},
		{wire.AccelAuto, 2, 0, true},
		{wire.AccelKVM, 4, 0, true},
		{wire.AccelIcount, -1, 0, true},
	} {
		got, err := workers(tc.accel, tc.requested)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("Workers(%s, %d) = %d, %v; want %d, error %v", tc.accel, tc.requested, got, err, tc.want, tc.err)
		}
	}
}

func TestRunStopsOnAKernelThatDoesNotBoot(t *testing.T) {
	log, res, sum, err := runFake(t, &Runner{Seed: 1}, 3, map[string]vmrunner.Outcome{"/k/B": vmrunner.Panic})
	if !errors.Is(err, ErrBootFailed) || !strings.Contains(err.Error(), "panic") {
		t.Fatalf("Run(B panics) = %v; want ErrBootFailed naming the panic", err)
	}
	if len(sum.Failed) != 1 || len(log) > 2 {
		t.Errorf("Run(B panics) booted %v, %d failures; want to stop after B's first boot", log, len(sum.Failed))
	}
	for _, r := range res {
		if r.GetConfig(wire.KeySide) == "B" {
			t.Errorf("a failed boot's results were written: %v", r.Config)
		}
	}
}

func TestRunStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupted by SIGINT")
	var log []string
	boot := fakeBoot(&log, nil)
	r := &Runner{Sides: testSides(), RunDir: t.TempDir(), Sink: streamResults(new(bytes.Buffer)),
		Exec: Local{Boot: func(ctx context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
			if len(log) == 3 {
				cancel(cause)
			}
			return boot(ctx, cfg)
		}}}
	err := r.Measure(ctx, 5)
	sum := r.Summary()
	if !errors.Is(err, cause) {
		t.Errorf("Run(canceled) = %v; want the cancel cause", err)
	}
	if n := sum.OK["A"] + sum.OK["B"]; n != 4 {
		t.Errorf("Run(canceled after the 4th boot) kept %d boots; want 4", n)
	}
}

// TestInsightArgsPerSide checks the kernel arguments of an armed insight
// pass: the pass runs in the first boot of each side, a side whose symbols
// the host has from a static source tells its guest to keep kallsyms, and
// every boot's command line has one length.
func TestInsightArgsPerSide(t *testing.T) {
	args, err := wire.InsightArgs([]string{"trie_lookup_elem"})
	if err != nil {
		t.Fatal(err)
	}
	cmdlines := map[string]string{} // side+boot → command line
	var mu sync.Mutex
	boot := func(ctx context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
		mu.Lock()
		side := cfg.Kernel[len("/k/"):]
		n := 1
		for cmdlines[fmt.Sprint(side, n)] != "" {
			n++
		}
		cmdlines[fmt.Sprint(side, n)] = strings.Join(cfg.KernelArgs, " ")
		mu.Unlock()
		var log []string
		return fakeBoot(&log, nil)(ctx, cfg)
	}
	sides := testSides()
	sides[0].StaticSymbols = true
	r := &Runner{Sides: sides, GuestArgs: args, Exec: Local{Boot: boot}, RunDir: t.TempDir()}
	if err := r.Measure(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string][]string{
		"A1": {"lpmbisect.insight=1", "lpmbisect.kallsyms=0"},
		"A2": {"lpmbisect.insight=0", "lpmbisect.kallsyms=0"},
		"B1": {"lpmbisect.insight=1", "lpmbisect.kallsyms=1"},
		"B2": {"lpmbisect.insight=0", "lpmbisect.kallsyms=1"},
	} {
		got := strings.Fields(cmdlines[key])
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("boot %s: kernel arguments %q; want %s", key, got, w)
			}
		}
		if len(cmdlines[key]) != len(cmdlines["B1"]) {
			t.Errorf("boot %s: %d bytes of kernel arguments, B1 %d; want one length", key, len(cmdlines[key]), len(cmdlines["B1"]))
		}
	}
}

// vcpuBoot is fakeBoot for a guest that reports seeing vcpus vCPUs.
func vcpuBoot(vcpus string) func(context.Context, vmrunner.Config) (*vmrunner.Result, error) {
	return func(_ context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
		var b bytes.Buffer
		w := wire.NewWriter(&b)
		r := &benchfmt.Result{Name: []byte("RingBuf/api=reserve/mode=producer/producers=1"), Iters: 1, Values: []benchfmt.Value{{Value: 100, Unit: "ns/op"}}}
		r.SetConfig(wire.KeyVCPUs, vcpus)
		w.Result(r)
		w.End()
		return &vmrunner.Result{Outcome: vmrunner.OK, Stream: wire.Decode(b.Bytes()), Accel: wire.AccelTCG}, nil
	}
}

func TestRunWarnsWhenTheGuestSeesFewerVCPUs(t *testing.T) {
	for _, tc := range []struct {
		asked int
		seen  string
		warn  bool
	}{
		{asked: 2, seen: "1", warn: true}, // a kernel without CONFIG_SMP
		{asked: 8, seen: "4", warn: true},
		{asked: 2, seen: "2"},
		{asked: 1, seen: "1"},
		{asked: 0, seen: "1"},  // 0 asks for the default, one
		{asked: 2, seen: ""},   // an older guest that does not say
		{asked: 2, seen: "x"},  // nonsense is not a count
		{asked: 2, seen: "-1"}, // nor is a negative one
	} {
		r := &Runner{VM: vmrunner.Config{CPUs: tc.asked}}
		var out bytes.Buffer
		r.Sides, r.Exec, r.Sink, r.RunDir = testSides(), Local{Boot: vcpuBoot(tc.seen)}, streamResults(&out), t.TempDir()
		if err := r.Measure(context.Background(), 2); err != nil {
			t.Fatalf("asked %d, seen %q: %v", tc.asked, tc.seen, err)
		}
		var warnings []string
		for _, n := range r.Summary().Notes {
			if n.Key == noteWarning {
				warnings = append(warnings, n.Text)
			}
		}
		switch {
		case tc.warn && len(warnings) != 1:
			t.Errorf("asked %d vCPUs, guests saw %q: warnings %q; want one, however many boots saw it", tc.asked, tc.seen, warnings)
		case tc.warn && !strings.Contains(warnings[0], fmt.Sprintf("saw %s vCPU(s) of the %d asked", tc.seen, tc.asked)):
			t.Errorf("warning %q; want it to say how many vCPUs the guest saw of how many asked", warnings[0])
		case !tc.warn && len(warnings) != 0:
			t.Errorf("asked %d vCPUs, guests saw %q: warnings %q; want none", tc.asked, tc.seen, warnings)
		}
	}
}

// A boot that fails while another boot of its side still runs, before any
// ended well, stops nothing when that one ends well: the guest failed,
// not the kernel. When every running boot of the side fails, the run
// stops as for a first boot that fails.
func TestRunWaitsForRunningBootsBeforeBlamingTheKernel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    []string // run directories whose boots panic
		wantErr bool
	}{
		{"one panics while the other runs", []string{"A-02"}, false},
		{"both panic", []string{"A-01", "A-02"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var log []string
			ok := fakeBoot(&log, nil)
			boot := func(ctx context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
				dir := cfg.RunDir[strings.LastIndex(cfg.RunDir, "/")+1:]
				if slices.Contains(tc.fail, dir) {
					time.Sleep(10 * time.Millisecond) // both have started
					if dir == "A-01" {
						time.Sleep(50 * time.Millisecond) // ends after A-02
					}
					return &vmrunner.Result{Outcome: vmrunner.Panic, Detail: "Fatal exception in interrupt", Stream: wire.Decode(nil), Accel: wire.AccelIcount}, nil
				}
				time.Sleep(50 * time.Millisecond) // A-01 is still running when A-02 panics
				mu.Lock()
				defer mu.Unlock()
				return ok(ctx, cfg)
			}
			sides := testSides()[:1]
			r := &Runner{Sides: sides, RunDir: t.TempDir(), Sink: streamResults(new(bytes.Buffer)), Exec: Local{Boot: boot, Workers: 2}}
			err := r.Measure(context.Background(), 2)
			sum := r.Summary()
			if tc.wantErr {
				if !errors.Is(err, ErrBootFailed) || len(sum.Failed) != 2 {
					t.Errorf("Measure = %v with %d failures; want ErrBootFailed after both boots failed", err, len(sum.Failed))
				}
				return
			}
			if err != nil || sum.OK["A"] != 2 || len(sum.Failed) != 1 {
				t.Errorf("Measure = %v, %d boots, %d failed; want 2 boots and the one failure kept", err, sum.OK["A"], len(sum.Failed))
			}
		})
	}
}

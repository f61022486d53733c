package measure

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// pacedFake is a fake Boot whose guest takes steps steps, each after the
// host's go, and checks that no two guests ever take a step at once.
type pacedFake struct {
	steps int
	// failBoot makes a side's nth boot panic after its first step.
	failBoot map[string]int
	boots    map[string]int
	running  atomic.Int32
	overlap  atomic.Bool
	mu       sync.Mutex
	log      []string // "A1" = side A took step 1
}

func (f *pacedFake) boot(_ context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
	side := cfg.Kernel[len("/k/"):]
	f.mu.Lock()
	if f.boots == nil {
		f.boots = map[string]int{}
	}
	f.boots[side]++
	fail := f.failBoot[side] == f.boots[side]
	f.mu.Unlock()
	if cfg.Pace == nil {
		panic("paired boot without Pace")
	}
	if len(cfg.PinCPUs) != 1 {
		panic("paired boot not pinned to one CPU")
	}
	var b bytes.Buffer
	w := wire.NewWriter(&b)
	for step := 1; step <= f.steps; step++ {
		resumed := make(chan struct{})
		cfg.Pace(step, func() { close(resumed) })
		<-resumed
		if f.running.Add(1) > 1 {
			f.overlap.Store(true)
		}
		f.mu.Lock()
		f.log = append(f.log, side+string(rune('0'+step)))
		f.mu.Unlock()
		if fail {
			f.running.Add(-1)
			return &vmrunner.Result{Outcome: vmrunner.Panic, Detail: "fake failure", Stream: wire.Decode(nil), Accel: wire.AccelTCG}, nil
		}
		r := &benchfmt.Result{Name: []byte("LPMTrie/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: float64(100 + step), Unit: "ns/op"}}}
		w.Result(r)
		f.running.Add(-1)
	}
	w.End()
	return &vmrunner.Result{Outcome: vmrunner.OK, Stream: wire.Decode(b.Bytes()), Accel: wire.AccelTCG, Channel: "virtio"}, nil
}

func runPairedFake(t *testing.T, f *pacedFake, pairs int, seed uint64) ([]*benchfmt.Result, *Summary, error) {
	t.Helper()
	var out bytes.Buffer
	r := &Runner{Sides: testSides(), Exec: &Paired{Boot: f.boot, Seed: seed}, Seed: seed, Sink: streamResults(&out), RunDir: t.TempDir(), Paired: true}
	err := r.Measure(context.Background(), pairs)
	sum := r.Summary()
	res, rerr := ReadResults(&out, "out")
	if rerr != nil {
		t.Fatal(rerr)
	}
	return res, sum, err
}

func TestRunPairedTakesTurns(t *testing.T) {
	f := &pacedFake{steps: 5}
	res, sum, err := runPairedFake(t, f, 3, 7)
	if err != nil || sum.Pairs != 3 || sum.OK["A"] != 3 || sum.OK["B"] != 3 {
		t.Fatalf("Run(paired) = %+v, %v; want 3 pairs", sum, err)
	}
	if f.overlap.Load() {
		t.Errorf("two guests took a step at the same time")
	}
	if sum.Steps != 3*2*5 {
		t.Errorf("Summary.Steps = %d; want %d", sum.Steps, 3*2*5)
	}
	// Within a pair, step k of both sides comes before step k+1 of either.
	for pair := 0; pair < 3; pair++ {
		log := f.log[pair*10 : pair*10+10]
		for i := 0; i < 10; i += 2 {
			a, b := log[i], log[i+1]
			if a[1:] != b[1:] || a[0] == b[0] {
				t.Errorf("pair %d took steps %v; want both sides' step k before either's step k+1", pair+1, log)
				break
			}
		}
	}
	firsts := map[byte]int{}
	for i := 0; i < len(f.log); i += 2 {
		firsts[f.log[i][0]]++
	}
	if firsts['A'] == 0 || firsts['B'] == 0 {
		t.Errorf("side A went first %d times, B %d; want both (a drawn order per step)", firsts['A'], firsts['B'])
	}
	pairs := map[string]int{}
	for _, r := range res {
		pairs[r.GetConfig(wire.KeySide)+r.GetConfig(wire.KeyPair)]++
	}
	for _, k := range []string{"A1", "B1", "A2", "B2", "A3", "B3"} {
		if pairs[k] != 5 {
			t.Errorf("results of %s = %d; want 5 labelled with side and pair (%v)", k, pairs[k], pairs)
		}
	}
}

func TestRunPairedRepeatsIncompletePairs(t *testing.T) {
	// A's second boot panics after its first step: round 2 is an
	// incomplete pair, and a third round completes the second pair.
	f := &pacedFake{steps: 2, failBoot: map[string]int{"A": 2}}
	res, sum, err := runPairedFake(t, f, 2, 1)
	if err != nil || sum.Pairs != 2 || len(sum.Failed) != 1 {
		t.Fatalf("Run(paired, one failure) = %+v, %v; want 2 complete pairs and 1 failed boot", sum, err)
	}
	if f.overlap.Load() {
		t.Errorf("two guests took a step at the same time")
	}
	// B's boot of round 2 is written, with its incomplete pair.
	seen := map[string]bool{}
	var bPairs []string
	for _, r := range res {
		if p := r.GetConfig(wire.KeyPair); r.GetConfig(wire.KeySide) == "B" && !seen[p] {
			seen[p] = true
			bPairs = append(bPairs, p)
		}
	}
	if got := strings.Join(bPairs, ","); got != "1,2,3" {
		t.Errorf("B's results are in pairs %s; want 1,2,3 (round 2 incomplete, repeated as round 3)", got)
	}
}

package measure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/initramfs"
	"github.com/lpmbisect/lpmbisect/kernel"
	"github.com/lpmbisect/lpmbisect/vmrunner"
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
			return &vmrunner.Result{Outcome: o, Detail: "fake failure", Stream: wire.Decode(nil), Accel: vmrunner.TCG}, nil
		}
		var b bytes.Buffer
		w := wire.NewWriter(&b)
		r := &benchfmt.Result{Name: []byte("LPMTrie/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: 100, Unit: "ns/op"}}}
		r.SetConfig(wire.KeyKernel, "guest-says")
		w.Result(r)
		w.End()
		return &vmrunner.Result{Outcome: vmrunner.OK, Stream: wire.Decode(b.Bytes()), Accel: vmrunner.TCG, Channel: "virtio"}, nil
	}
}

func runFake(t *testing.T, p Plan, fail map[string]vmrunner.Outcome) ([]string, []*benchfmt.Result, *Summary, error) {
	t.Helper()
	var log []string
	var out bytes.Buffer
	p.Sides, p.Boot, p.Results, p.RunDir = testSides(), fakeBoot(&log, fail), benchfmt.NewWriter(&out), t.TempDir()
	sum, err := Run(context.Background(), p)
	res, rerr := ReadResults(&out, "out")
	if rerr != nil {
		t.Fatal(rerr)
	}
	return log, res, sum, err
}

func TestRunInterleavesInSeededRandomOrder(t *testing.T) {
	orders := map[string]bool{}
	for seed := range uint64(8) {
		log, res, sum, err := runFake(t, Plan{Boots: 6, Seed: seed}, nil)
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
		again, _, _, _ := runFake(t, Plan{Boots: 6, Seed: seed}, nil)
		if strings.Join(again, "") != strings.Join(log, "") {
			t.Errorf("Run(seed %d) order %v then %v; want the same order for the same seed", seed, log, again)
		}
		if got := res[0].GetConfig(KeySeed); got != fmt.Sprint(seed) {
			t.Errorf("results %s = %q; want %d", KeySeed, got, seed)
		}
	}
	if len(orders) < 4 {
		t.Errorf("8 seeds gave %d distinct orders; want the order to depend on the seed", len(orders))
	}
}

func TestRunLabelsResults(t *testing.T) {
	_, res, _, err := runFake(t, Plan{Boots: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("got %d results; want 4", len(res))
	}
	for _, r := range res {
		side := r.GetConfig(KeySide)
		want := map[string]string{"A": "6.1.0-test", "B": "6.2.0-test"}[side]
		if got := r.GetConfig(wire.KeyKernel); got != want {
			t.Errorf("side %s kernel = %q; want the host's label %q, not the guest's", side, got, want)
		}
		if r.GetConfig(KeyBoot) == "" || r.GetConfig(KeyImage) != strings.Repeat(side, 12) || r.GetConfig(wire.KeyAccel) != "tcg" {
			t.Errorf("result config %v lacks boot, image or accel", r.Config)
		}
	}
}

func TestRunAddsBootsOnlyWhileAsked(t *testing.T) {
	asked := 0
	more := func() bool { asked++; return asked <= 2 } // two more rounds, then enough
	_, _, sum, err := runFake(t, Plan{Boots: 4, MaxBoots: 10, More: more}, nil)
	if err != nil || sum.OK["A"] != 6 || sum.OK["B"] != 6 {
		t.Errorf("Run(adaptive, 2 extra rounds) = %v, %v; want 6 boots per side", sum.OK, err)
	}
	_, _, sum, _ = runFake(t, Plan{Boots: 4, MaxBoots: 5, More: func() bool { return true }}, nil)
	if sum.OK["A"] != 5 || sum.OK["B"] != 5 {
		t.Errorf("Run(always more, MaxBoots 5) = %v; want the cap of 5 per side", sum.OK)
	}
}

func TestRunStopsOnAKernelThatDoesNotBoot(t *testing.T) {
	log, res, sum, err := runFake(t, Plan{Boots: 3, Seed: 1}, map[string]vmrunner.Outcome{"/k/B": vmrunner.Panic})
	if !errors.Is(err, ErrBootFailed) || !strings.Contains(err.Error(), "panic") {
		t.Fatalf("Run(B panics) = %v; want ErrBootFailed naming the panic", err)
	}
	if len(sum.Failed) != 1 || len(log) > 2 {
		t.Errorf("Run(B panics) booted %v, %d failures; want to stop after B's first boot", log, len(sum.Failed))
	}
	for _, r := range res {
		if r.GetConfig(KeySide) == "B" {
			t.Errorf("a failed boot's results were written: %v", r.Config)
		}
	}
}

func TestRunStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupted by SIGINT")
	var log []string
	boot := fakeBoot(&log, nil)
	p := Plan{Boots: 5, Sides: testSides(), RunDir: t.TempDir(), Results: benchfmt.NewWriter(new(bytes.Buffer)),
		Boot: func(ctx context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
			if len(log) == 3 {
				cancel(cause)
			}
			return boot(ctx, cfg)
		}}
	sum, err := Run(ctx, p)
	if !errors.Is(err, cause) {
		t.Errorf("Run(canceled) = %v; want the cancel cause", err)
	}
	if n := sum.OK["A"] + sum.OK["B"]; n != 4 {
		t.Errorf("Run(canceled after the 4th boot) kept %d boots; want 4", n)
	}
}

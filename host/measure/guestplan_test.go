package measure

import (
	"errors"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

func validPlan() GuestPlan {
	return GuestPlan{Bench: "LPMTrie/op=lookup", Samples: 5, Entries: 10000, Rounds: 20}
}

func TestGuestPlanKernelArgs(t *testing.T) {
	g := validPlan()
	g.Bench = "lpm"
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", g, err)
	}
	got := strings.Join(g.KernelArgs(), " ")
	want := "lpmbisect.bench=^LPMTrie(Unrolled)?/ lpmbisect.samples=5 lpmbisect.entries=10000 lpmbisect.rounds=20 lpmbisect.prefix_len=32 lpmbisect.batch_entries=100000"
	if got != want {
		t.Errorf("KernelArgs() = %q; want %q", got, want)
	}
	g.Bench, g.PrefixLen, g.BatchEntries = "all", 24, 1000000
	got = strings.Join(g.KernelArgs(), " ")
	for _, w := range []string{"lpmbisect.bench=. ", "lpmbisect.prefix_len=24", "lpmbisect.batch_entries=1000000"} {
		if !strings.Contains(got, w) {
			t.Errorf("KernelArgs() = %q; want it to contain %q", got, w)
		}
	}
	if n := len(got); n > 300 {
		t.Errorf("KernelArgs() is %d bytes; want it compact", n)
	}
}

// TestGuestPlanGuestDecodes checks that what the host sends is what the
// guest decodes, presets resolved and defaults filled in.
func TestGuestPlanGuestDecodes(t *testing.T) {
	g := validPlan()
	g.Bench, g.Samples = "syscall,batch", 7
	got, err := wire.DecodePlan("console=ttyS0 " + strings.Join(g.KernelArgs(), " "))
	want := wire.Plan{Bench: "(^LPMTrieSyscall/)|(^MapBatch/)", Samples: 7, Entries: 10000, Rounds: 20, PrefixLen: 32, BatchEntries: 100000, Port: wire.PortName}
	if err != nil || got != want || got != g.Wire() {
		t.Errorf("DecodePlan(KernelArgs of %+v) = %+v, %v; want %+v", g, got, err, want)
	}
}

func TestGuestPlanValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*GuestPlan)
		param  wire.Param // at fault; "" for valid
		want   string     // in the error
	}{
		{"default", func(*GuestPlan) {}, "", ""},
		{"presets", func(g *GuestPlan) { g.Bench = "syscall,batch" }, "", ""},
		{"noop control", func(g *GuestPlan) { g.Bench = "LPMTrie/op=noop" }, "", ""},
		{"empty", func(g *GuestPlan) { g.Bench = "" }, wire.ParamBench, "presets: lookup"},
		{"space", func(g *GuestPlan) { g.Bench = "a b" }, wire.ParamBench, `bench "a b" malformed`},
		{"bad regexp", func(g *GuestPlan) { g.Bench = "LPM(" }, wire.ParamBench, "missing closing )"},
		{"matches nothing", func(g *GuestPlan) { g.Bench = "NoSuchBench" }, wire.ParamBench, `bench "NoSuchBench" selects no benchmark`},
		{"too long", func(g *GuestPlan) { g.Bench = strings.Repeat("a|", 600) + "LPMTrie" }, wire.ParamBench, "kernel command line"},
		{"prefix too short", func(g *GuestPlan) { g.PrefixLen = 8 }, wire.ParamPrefixLen, "prefix_len 8 out of range"},
		{"prefix too long", func(g *GuestPlan) { g.PrefixLen = 33 }, wire.ParamPrefixLen, "prefix_len 33 out of range [1, 32]"},
		{"batch entries", func(g *GuestPlan) { g.BatchEntries = 1 << 30 }, wire.ParamBatchEntries, "batch_entries"},
		{"zero samples", func(g *GuestPlan) { g.Samples = 0 }, wire.ParamSamples, "samples 0 out of range [1, 1000]"},
		{"too many samples", func(g *GuestPlan) { g.Samples = 1001 }, wire.ParamSamples, "samples 1001 out of range [1, 1000]"},
		{"entries", func(g *GuestPlan) { g.Entries = 1<<26 + 1 }, wire.ParamEntries, "entries"},
		{"rounds", func(g *GuestPlan) { g.Rounds = 0 }, wire.ParamRounds, "rounds"},
	} {
		g := validPlan()
		c.change(&g)
		err := g.Validate()
		var pe *wire.ParamError
		switch {
		case c.param == "" && err != nil:
			t.Errorf("%s: Validate(%+v) = %v; want nil", c.name, g, err)
		case c.param != "" && (!errors.As(err, &pe) || pe.Param != c.param || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: Validate(%+v) = %v; want a *wire.ParamError for %s mentioning %q", c.name, g, err, c.param, c.want)
		case c.param != "" && strings.Contains(err.Error(), "--"):
			t.Errorf("%s: Validate(%+v) = %v; want no flag named (the CLI maps parameters to flags)", c.name, g, err)
		}
	}
	g := validPlan()
	g.Bench = "NoSuchBench"
	if err := g.Validate(); !errors.Is(err, ErrNoBenchmark) {
		t.Errorf("Validate(%+v) = %v; want ErrNoBenchmark", g, err)
	}
}

func TestGuestPlanWithControls(t *testing.T) {
	g := validPlan()
	plain := g.Benchmarks()
	with := g.WithControls()
	if got := with.Benchmarks(); got != plain+3 {
		t.Errorf("WithControls().Benchmarks() = %d; want %d (noop and two baselines added)", got, plain+3)
	}
	if again := with.WithControls(); again.Benchmarks() != with.Benchmarks() {
		t.Errorf("WithControls twice selects %d; want %d", again.Benchmarks(), with.Benchmarks())
	}
	if err := with.Validate(); err != nil {
		t.Errorf("WithControls().Validate() = %v", err)
	}
}

package measure

import (
	"strings"
	"testing"
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
	g.Bench, g.PrefixLen, g.BatchEntries, g.Fault = "all", 24, 1000000, "hang"
	got = strings.Join(g.KernelArgs(), " ")
	for _, w := range []string{"lpmbisect.bench=. ", "lpmbisect.prefix_len=24", "lpmbisect.batch_entries=1000000", "lpmbisect.fault=hang"} {
		if !strings.Contains(got, w) {
			t.Errorf("KernelArgs() = %q; want it to contain %q", got, w)
		}
	}
	if n := len(got); n > 300 {
		t.Errorf("KernelArgs() is %d bytes; want it compact", n)
	}
}

func TestGuestPlanValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*GuestPlan)
		want   string // in the error; "" for valid
	}{
		{"default", func(*GuestPlan) {}, ""},
		{"presets", func(g *GuestPlan) { g.Bench = "syscall,batch" }, ""},
		{"noop control", func(g *GuestPlan) { g.Bench = "LPMTrie/op=noop" }, ""},
		{"empty", func(g *GuestPlan) { g.Bench = "" }, "--bench"},
		{"space", func(g *GuestPlan) { g.Bench = "a b" }, "--bench"},
		{"bad regexp", func(g *GuestPlan) { g.Bench = "LPM(" }, "--bench"},
		{"matches nothing", func(g *GuestPlan) { g.Bench = "NoSuchBench" }, "selects no benchmark"},
		{"too long", func(g *GuestPlan) { g.Bench = strings.Repeat("a|", 600) + "LPMTrie" }, "command line"},
		{"prefix too short", func(g *GuestPlan) { g.PrefixLen = 8 }, "--prefix-len 8"},
		{"prefix too long", func(g *GuestPlan) { g.PrefixLen = 33 }, "--prefix-len"},
		{"batch entries", func(g *GuestPlan) { g.BatchEntries = 1 << 30 }, "--batch-entries"},
		{"zero samples", func(g *GuestPlan) { g.Samples = 0 }, "--samples"},
	} {
		g := validPlan()
		c.change(&g)
		err := g.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: Validate(%+v) = %v; want nil", c.name, g, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: Validate(%+v) = %v; want an error mentioning %q", c.name, g, err, c.want)
		}
	}
}

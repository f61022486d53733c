package guestfaults

import (
	"bytes"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// TestBimodal checks that Bimodal's second mode (an odd boot second)
// shifts every value by BimodalShift while the first leaves them alone,
// and that the trailer still proves the shifted results.
func TestBimodal(t *testing.T) {
	defer func(s int64) { bootSecond = s }(bootSecond)
	for _, tc := range []struct {
		second int64
		factor float64
	}{
		{2, 1},
		{3, 1 + BimodalShift},
	} {
		bootSecond = tc.second
		var stream bytes.Buffer
		w := wire.NewWriter(&stream)
		out := &faultyOutput{out: w, fault: Bimodal}
		for i := range 3 {
			r := &benchfmt.Result{Name: []byte("LPMTrie/op=lookup"), Iters: 50000, Values: []benchfmt.Value{{Value: float64(800 + i), Unit: "insn/op"}}}
			r.SetConfig(wire.KeyKernel, "6.12.117")
			if err := out.Result(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
		s := wire.Decode(stream.Bytes())
		if !s.Complete || len(s.Results) != 3 {
			t.Fatalf("boot second %d: Decode: complete %v (%s), %d results; want 3 results proven by the trailer", tc.second, s.Complete, s.Problem, len(s.Results))
		}
		for i, r := range s.Results {
			if got, want := r.Values[0].Value, float64(800+i)*tc.factor; got != want {
				t.Errorf("boot second %d: result %d = %g; want %g", tc.second, i, got, want)
			}
		}
	}
}

// TestFromCmdline checks that the kernel command line arms the fault it
// names, and nothing for none or an unknown one.
func TestFromCmdline(t *testing.T) {
	for _, c := range []struct {
		cmdline string
		want    any
	}{
		{"console=ttyS0 lpmbisect.bench=x " + Arg(Hang), injector(Hang)},
		{Arg(LieSum) + " quiet", injector(LieSum)},
		{"console=ttyS0 lpmbisect.bench=x", nil},
		{Arg("explode"), nil},
	} {
		got := FromCmdline(c.cmdline)
		if c.want == nil && got != nil || c.want != nil && got != c.want {
			t.Errorf("FromCmdline(%q) = %v; want %v", c.cmdline, got, c.want)
		}
	}
	if !injector(Throttle).LowSampleRate() || injector(Hang).LowSampleRate() {
		t.Error("LowSampleRate: want it for Throttle alone")
	}
}

package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSplitCmdline(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"console=ttyS0 panic=-1\n", []string{"console=ttyS0", "panic=-1"}},
		{"  a  b=1\tc \r\v\fd", []string{"a", "b=1", "c", "d"}},
		{`lpmbisect.bench="op=lookup/keys=(random|x y)" quiet`, []string{"lpmbisect.bench=op=lookup/keys=(random|x y)", "quiet"}},
		{`"lpmbisect.bench=a b" z`, []string{"lpmbisect.bench=a b", "z"}},
		{`x=""`, []string{"x="}},
		{"é=\xff", []string{"é=\xff"}},
		{`a"b c"d e`, []string{`a"b c"d`, "e"}},
		{`p="v" "q" "r=s`, []string{"p=v", "q", "r=s"}},
		{`lpmbisect.bench=a"b"`, []string{`lpmbisect.bench=a"b"`}},
		{"", nil},
	} {
		if got := splitCmdline(tt.in); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("splitCmdline(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestDecodePlanDefaults(t *testing.T) {
	p, err := DecodePlan("BOOT_IMAGE=/vmlinuz console=ttyS0 panic=-1 lpmbisectx=1")
	if err != nil {
		t.Fatalf("DecodePlan(no lpmbisect parameters) = %v", err)
	}
	want := Plan{Bench: "LPMTrie/op=lookup", Samples: 5, Entries: 10000, Rounds: 20, PrefixLen: 32, BatchEntries: 100000, Port: "lpmbisect.results"}
	if p != want || p != DefaultPlan() {
		t.Errorf("DecodePlan(no lpmbisect parameters) = %+v; want %+v", p, want)
	}
	if err := DefaultPlan().Validate(); err != nil {
		t.Errorf("DefaultPlan().Validate() = %v", err)
	}
}

func TestDefaultRounds(t *testing.T) {
	for _, tt := range []struct {
		accel Accel
		want  int
	}{
		{AccelIcount, DefaultIcountRounds},
		{AccelTCG, DefaultWallClockRounds},
		{AccelKVM, DefaultWallClockRounds},
		{"", DefaultWallClockRounds},
		{"auto", DefaultWallClockRounds},
	} {
		if got := DefaultRounds(tt.accel); got != tt.want {
			t.Errorf("DefaultRounds(%q) = %d; want %d", tt.accel, got, tt.want)
		}
	}
	if DefaultIcountRounds >= DefaultWallClockRounds {
		t.Errorf("DefaultIcountRounds = %d; want fewer than DefaultWallClockRounds (%d)", DefaultIcountRounds, DefaultWallClockRounds)
	}
}

// A command line that names the accelerator but not the rounds gets the
// accelerator's default, wherever the accelerator appears; explicit rounds
// always win.
func TestDecodePlanRoundsByAccel(t *testing.T) {
	for _, tt := range []struct {
		cmdline string
		want    int
	}{
		{"lpmbisect.accel=icount", DefaultIcountRounds},
		{"lpmbisect.accel=tcg", DefaultWallClockRounds},
		{"lpmbisect.samples=3", DefaultWallClockRounds},
		{"lpmbisect.rounds=20 lpmbisect.accel=icount", 20},
		{"lpmbisect.accel=icount lpmbisect.rounds=1", 1},
		{"lpmbisect.accel=icount lpmbisect.accel=kvm", DefaultWallClockRounds},
	} {
		p, err := DecodePlan(tt.cmdline)
		if err != nil || p.Rounds != tt.want {
			t.Errorf("DecodePlan(%q) = rounds %d, %v; want %d", tt.cmdline, p.Rounds, err, tt.want)
		}
	}
	// What the host sends always names the rounds, so the guest runs the
	// plan's rounds whatever its own defaults.
	for _, a := range Accels {
		p := DefaultPlan()
		p.Accel, p.Rounds = a, DefaultRounds(a)
		got, err := DecodePlan(strings.Join(p.KernelArgs(), " "))
		if err != nil || got != p {
			t.Errorf("DecodePlan(KernelArgs(%+v)) = %+v, %v; want the plan", p, got, err)
		}
	}
}

func TestDecodePlan(t *testing.T) {
	p, err := DecodePlan("console=ttyS0 lpmbisect.bench=keys=random$ lpmbisect.samples=3 lpmbisect.entries=100000 " +
		"lpmbisect.rounds=7 lpmbisect.accel=icount lpmbisect.port=other lpmbisect.samples=4 " +
		"lpmbisect.prefix_len=24 lpmbisect.batch_entries=5000 lpmbisect.paced=1 lpmbisect.entries=0100000")
	if err != nil {
		t.Fatalf("DecodePlan() = %v", err)
	}
	want := Plan{Bench: "keys=random$", Samples: 4, Entries: 100000, Rounds: 7, PrefixLen: 24, BatchEntries: 5000,
		Accel: AccelIcount, Port: "other", Paced: true}
	if p != want {
		t.Errorf("DecodePlan() = %+v; want %+v", p, want)
	}
	for _, a := range Accels {
		if p, err := DecodePlan("lpmbisect.accel=" + string(a)); err != nil || p.Accel != a {
			t.Errorf("DecodePlan(lpmbisect.accel=%s) = accel %q, %v; want %s", a, p.Accel, err, a)
		}
	}
	if p, err := DecodePlan("lpmbisect.paced=1 lpmbisect.paced=0"); err != nil || p.Paced {
		t.Errorf("DecodePlan(paced=1 paced=0) = paced %v, %v; want false (the last one wins)", p.Paced, err)
	}
}

func TestDecodePlanRejects(t *testing.T) {
	for _, tt := range []struct {
		arg   string
		param Param
		why   error
	}{
		{"lpmbisect.bench=(", ParamBench, ErrMalformed},
		{"lpmbisect.bench=", ParamBench, ErrMalformed},
		{`"lpmbisect.bench=a b"`, ParamBench, ErrMalformed},
		{`lpmbisect.bench=a"b"`, ParamBench, ErrMalformed}, // the kernel would keep inner quotes
		{"lpmbisect.bench=" + strings.Repeat("a", maxBenchLen+1), ParamBench, ErrOutOfRange},
		{"lpmbisect.bench=\xff", ParamBench, ErrMalformed},
		{"lpmbisect.samples=0", ParamSamples, ErrOutOfRange},
		{"lpmbisect.samples=1001", ParamSamples, ErrOutOfRange},
		{"lpmbisect.samples=x", ParamSamples, ErrMalformed},
		{"lpmbisect.samples=+5", ParamSamples, ErrMalformed},
		{"lpmbisect.samples=5.0", ParamSamples, ErrMalformed},
		{"lpmbisect.entries=-1", ParamEntries, ErrMalformed},
		{"lpmbisect.entries=67108865", ParamEntries, ErrOutOfRange},
		{"lpmbisect.entries=99999999999999999999999", ParamEntries, ErrOutOfRange},
		{"lpmbisect.rounds=", ParamRounds, ErrMalformed},
		{"lpmbisect.rounds=1048577", ParamRounds, ErrOutOfRange},
		{"lpmbisect.prefix_len=0", ParamPrefixLen, ErrOutOfRange},
		{"lpmbisect.prefix_len=33", ParamPrefixLen, ErrOutOfRange},
		{"lpmbisect.prefix_len=8", ParamPrefixLen, ErrOutOfRange}, // 256 prefixes < 10000 entries
		{"lpmbisect.batch_entries=0", ParamBatchEntries, ErrOutOfRange},
		{"lpmbisect.batch_entries=16777217", ParamBatchEntries, ErrOutOfRange},
		{"lpmbisect.accel=hvf", ParamAccel, ErrMalformed},
		{"lpmbisect.accel=tcg-icount", ParamAccel, ErrMalformed},
		{"lpmbisect.accel=auto", ParamAccel, ErrMalformed},
		{"lpmbisect.accel=", ParamAccel, ErrMalformed},
		{"lpmbisect.port=", ParamPort, ErrMalformed},
		{"lpmbisect.port=../x", ParamPort, ErrMalformed},
		{"lpmbisect.paced=2", ParamPaced, ErrMalformed},
		{"lpmbisect.paced", ParamPaced, ErrMalformed},
		{"lpmbisect.fault=hang", "lpmbisect.fault", ErrUnknownParam},
		{"lpmbisect.sampels=3", "lpmbisect.sampels", ErrUnknownParam},
		{"lpmbisect.prefix-len=24", "lpmbisect.prefix-len", ErrUnknownParam},
	} {
		p, err := DecodePlan("console=ttyS0 " + tt.arg + " quiet")
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != tt.param || !errors.Is(err, tt.why) {
			t.Errorf("DecodePlan(%q) = %+v, %v; want a *ParamError for %s wrapping %v", tt.arg, p, err, tt.param, tt.why)
		}
	}
}

func TestParamErrorMessages(t *testing.T) {
	valid := DefaultPlan()
	for _, tt := range []struct {
		change func(*Plan)
		want   string
	}{
		{func(p *Plan) { p.Samples = 0 }, "samples 0 out of range [1, 1000]"},
		{func(p *Plan) { p.Entries = 1 << 27 }, "entries 134217728 out of range [1, 67108864]"},
		{func(p *Plan) { p.PrefixLen = 8 }, "prefix_len 8 out of range: 256 distinct prefixes, fewer than entries 10000 (raise prefix_len)"},
		{func(p *Plan) { p.BatchEntries = -1 }, `batch_entries "-1" out of range [1, 16777216]`},
		{func(p *Plan) { p.Bench = "a b" }, `bench "a b" malformed: contains a space, a quote or a control character (want a regexp over result names)`},
		{func(p *Plan) { p.Bench = "LPM(" }, "bench \"LPM(\" malformed: error parsing regexp: missing closing ): `LPM(`"},
		{func(p *Plan) { p.Bench = strings.Repeat("x", 2000) }, `bench "` + strings.Repeat("x", 48) + `"… out of range: 2000 bytes, more than the 1024 the kernel command line leaves for it (use a shorter regexp)`},
		{func(p *Plan) { p.Accel = "hvf" }, `accel "hvf" malformed: not a boot's accelerator (want kvm, tcg or icount)`},
		{func(p *Plan) { p.Port = "" }, `port "" malformed: not a port name (want a non-empty name without '/', spaces or quotes)`},
		{func(p *Plan) { p.ProfilePeriod = 9973 }, "profile 9973 out of range [10000, 1000000000] (the kernel clamps shorter periods to 10 µs)"},
	} {
		p := valid
		tt.change(&p)
		if err := p.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("%+v.Validate() = %v; want %s", p, err, tt.want)
		}
	}
	_, err := DecodePlan("lpmbisect.sampels=3")
	if want := "lpmbisect.sampels: unknown parameter (known: lpmbisect.bench, lpmbisect.samples, lpmbisect.entries, lpmbisect.rounds, " +
		"lpmbisect.prefix_len, lpmbisect.batch_entries, lpmbisect.accel, lpmbisect.port, lpmbisect.paced, lpmbisect.insight, lpmbisect.count, lpmbisect.kallsyms, lpmbisect.workload, lpmbisect.verify, lpmbisect.profile or lpmbisect.memory)"; err == nil || err.Error() != want {
		t.Errorf("DecodePlan(lpmbisect.sampels=3) = %v; want %s", err, want)
	}
}

// plans are valid plans for the round trip: defaults, limits, every
// optional field set, and values the command line must carry unchanged.
func plans() []Plan {
	d := DefaultPlan()
	var out []Plan
	add := func(change func(*Plan)) {
		p := d
		change(&p)
		out = append(out, p)
	}
	add(func(*Plan) {})
	add(func(p *Plan) {
		p.Samples, p.Entries, p.Rounds, p.PrefixLen, p.BatchEntries = 1, 1, 1, 1, 1
	})
	add(func(p *Plan) {
		p.Samples, p.Entries, p.Rounds, p.PrefixLen, p.BatchEntries = maxSamples, maxEntries, maxRounds, maxPrefixLen, maxBatchEntries
	})
	add(func(p *Plan) { p.PrefixLen, p.Entries = 14, 1<<14 })
	add(func(p *Plan) { p.Workload, p.Bench = "xdp_lpm_lookup", "^Workload/" })
	for _, a := range Accels {
		add(func(p *Plan) { p.Accel = a })
	}
	add(func(p *Plan) { p.Paced, p.Port, p.Accel = true, "other.port", AccelTCG })
	add(func(p *Plan) { p.Bench = "(^LPMTrie(Unrolled)?/)|(^LPMTrie/op=(noop|baseline)(/|$))" })
	add(func(p *Plan) { p.Bench = "op=lookup/keys=random/entries=10000$" }) // '=' in a value
	add(func(p *Plan) { p.Bench = "é|ü" })
	add(func(p *Plan) { p.Bench = strings.Repeat("a", maxBenchLen) })
	add(func(p *Plan) { p.Port = "a=b" })
	add(func(p *Plan) { p.Insight, p.Count = InsightArmed, "trie_lookup_elem,longest_prefix_match" })
	add(func(p *Plan) { p.Insight = InsightOn })
	add(func(p *Plan) { p.Insight, p.Count, p.SkipKallsyms = InsightOn, "trie_lookup_elem", true })
	add(func(p *Plan) { p.SkipKallsyms = true })
	add(func(p *Plan) { p.Workload, p.Verify = "xdp_a,xdp_b", "kprobe_c" })
	add(func(p *Plan) { p.Insight, p.ProfilePeriod = InsightArmed, 20011 })
	add(func(p *Plan) { p.Insight, p.ProfilePeriod = InsightOn, minProfilePeriod })
	add(func(p *Plan) { p.Insight, p.ProfilePeriod, p.Memory = InsightArmed, 20011, true })
	return out
}

func TestWorkloadName(t *testing.T) {
	for name, ok := range map[string]bool{"xdp_prog": true, "_x1": true, "a,b_2": true, "1x": false, "a-b": false, "a b": false,
		"a,": false, ",a": false, "a,,b": false, strings.Repeat("a", maxWorkloadLen+1): false} {
		p := DefaultPlan()
		p.Workload = name
		if err := p.Validate(); (err == nil) != ok {
			t.Errorf("Validate() of workload %q = %v; want ok %v", name, err, ok)
		}
		p = DefaultPlan()
		p.Verify = name
		if err := p.Validate(); (err == nil) != ok {
			t.Errorf("Validate() of verify %q = %v; want ok %v", name, err, ok)
		}
	}
}

func TestPlanRoundTrip(t *testing.T) {
	for _, p := range plans() {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v.Validate() = %v; want nil", p, err)
			continue
		}
		cmdline := "BOOT_IMAGE=/vmlinuz console=ttyS0,115200 " + strings.Join(p.KernelArgs(), " ") + " panic=-1"
		got, err := DecodePlan(cmdline)
		if err != nil || got != p {
			t.Errorf("DecodePlan(%q) = %+v, %v; want %+v", cmdline, got, err, p)
		}
	}
}

func TestKernelArgs(t *testing.T) {
	p := DefaultPlan()
	p.Bench = "^LPMTrie(Unrolled)?/"
	got := strings.Join(p.KernelArgs(), " ")
	// The arguments of a plan without accel, port and paced are
	// those the host has always written (bisect's parameter keys hash them).
	want := "lpmbisect.bench=^LPMTrie(Unrolled)?/ lpmbisect.samples=5 lpmbisect.entries=10000 lpmbisect.rounds=20 lpmbisect.prefix_len=32 lpmbisect.batch_entries=100000"
	if got != want {
		t.Errorf("KernelArgs() = %q; want %q", got, want)
	}
	p.Accel, p.Port, p.Paced = AccelIcount, "p", true
	got = strings.Join(p.KernelArgs(), " ")
	if want := want + " lpmbisect.accel=icount lpmbisect.port=p lpmbisect.paced=1"; got != want {
		t.Errorf("KernelArgs() = %q; want %q", got, want)
	}
	if PacedArg != "lpmbisect.paced=1" {
		t.Errorf("PacedArg = %q; want lpmbisect.paced=1", PacedArg)
	}
}

func TestAccel(t *testing.T) {
	for _, tt := range []struct {
		a    Accel
		unit string
	}{{AccelKVM, "ns/op"}, {AccelTCG, "ns/op"}, {AccelIcount, "insn/op"}} {
		if got, err := ParseAccel(string(tt.a)); got != tt.a || err != nil {
			t.Errorf("ParseAccel(%q) = %q, %v; want %q", tt.a, got, err, tt.a)
		}
		if got := tt.a.Unit(); got != tt.unit {
			t.Errorf("%s.Unit() = %q; want %q", tt.a, got, tt.unit)
		}
	}
	for s, want := range map[string]Accel{"auto": AccelAuto, "KVM": AccelKVM, "Icount": AccelIcount} {
		if got, err := ParseAccel(s); got != want || err != nil {
			t.Errorf("ParseAccel(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	for _, s := range []string{"", "hvf", "tcg-icount"} {
		if _, err := ParseAccel(s); !errors.Is(err, ErrUnknownAccel) {
			t.Errorf("ParseAccel(%q) = %v; want ErrUnknownAccel", s, err)
		}
	}
	for _, s := range []string{"", "auto", "hvf"} {
		if _, err := parseBootAccel(s); !errors.Is(err, ErrNotBootAccel) {
			t.Errorf("ParseBootAccel(%q) = %v; want ErrNotBootAccel", s, err)
		}
	}
}

// FuzzPlan decodes arbitrary command lines: whatever decodes is a valid plan
// whose encoding decodes to the same plan, and whatever does not is a
// *ParamError.
func FuzzPlan(f *testing.F) {
	for _, p := range plans() {
		f.Add(strings.Join(p.KernelArgs(), " "))
	}
	for _, s := range []string{"", "console=ttyS0 panic=-1", `"lpmbisect.bench=a b"`, "lpmbisect.samples=0",
		`lpmbisect.bench="x`, "lpmbisect.port=a\x00b", "lpmbisect.entries=300 lpmbisect.prefix_len=9", "lpmbisect."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmdline string) {
		p, err := DecodePlan(cmdline)
		if err != nil {
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("DecodePlan(%q) = %v; want a *ParamError", cmdline, err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("DecodePlan(%q) = %+v, which fails Validate: %v", cmdline, p, err)
		}
		again := strings.Join(p.KernelArgs(), " ")
		q, err := DecodePlan(again)
		if err != nil || q != p {
			t.Fatalf("DecodePlan(%q) = %+v, %v; want %+v (decoded from %q)", again, q, err, p, cmdline)
		}
		if third := strings.Join(q.KernelArgs(), " "); third != again {
			t.Fatalf("KernelArgs not stable: %q, then %q", again, third)
		}
	})
}

package vmrunner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

const memcountSample = `memcount 1 l1d 49152 12 l1i 32768 8 llc 2097152 16 dtlb 64 4 line 64 page 4096
segment 1 windows 10 insns 32537 l1d 7555 104 l1i 32000 1 llc 105 3 dtlb 7555 1
pc 1 ffffffff81234567 5000 100 2 1
pc 1 ffffffffc0001000 2555 4 1 0
end segments 1 marks 12 12 1 1 1 1 armed_ns 2000000000 1500000000
`

func TestParseMemCounts(t *testing.T) {
	m, err := parseMemCounts(strings.NewReader(memcountSample))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Segment(1)
	if !m.Complete || s == nil || s.Windows != 10 || s.Insns != 32537 || s.L1D != (CacheCount{7555, 104}) || s.DTLB != (CacheCount{7555, 1}) || len(s.PCs) != 2 || s.PCs[0].PC != 0xffffffff81234567 || m.Marks != [6]uint64{12, 12, 1, 1, 1, 1} || m.ArmedCPU != 1500*time.Millisecond {
		t.Errorf("parseMemCounts() = %+v, segment %+v", m, s)
	}
	if m.Segment(2) != nil {
		t.Errorf("Segment(2) = %+v; want nil", m.Segment(2))
	}
}

// The exact profile's lines (format 2): every instruction's executions,
// calls by site and target, the transfers by kind, the mitigations'
// instructions.
const memcountSample2 = `memcount 2 l1d 49152 12 l1i 32768 8 llc 2097152 16 dtlb 64 4 line 64 page 4096
segment 1 windows 10 insns 60 l1d 7555 104 l1i 60 1 llc 105 3 dtlb 7555 1
flow 1 call 10 icall 0 ret 10 jmp 1 ijmp 0 jcc 20 taken 15 other 0 rep 3 none 2 diverted 1
special 1 verw 0 lfence 2 wrmsr 0
exec 1 ffffffff81234567 50
exec 1 ffffffffffffffff 10
call 1 ffffffff81234560 ffffffff81234567 10
pc 1 ffffffff81234567 5000 100 2 1
end segments 1 marks 12 12 1 1 1 1 armed_ns 2000000000 1500000000
`

func TestParseMemCountsExactProfile(t *testing.T) {
	m, err := parseMemCounts(strings.NewReader(memcountSample2))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Segment(1)
	want := FlowCounts{Call: 10, Ret: 10, Jmp: 1, Jcc: 20, Taken: 15, Rep: 3, None: 2, Diverted: 1}
	if m.Version != 2 || s == nil || s.Flow == nil || *s.Flow != want || s.Special["lfence"] != 2 || len(s.Special) != 3 ||
		!slices.Equal(s.Execs, []PCCount{{0xffffffff81234567, 50}, {PCOverflow, 10}}) ||
		!slices.Equal(s.Calls, []CallSite{{0xffffffff81234560, 0xffffffff81234567, 10}}) {
		t.Errorf("parseMemCounts() = version %d, segment %+v (flow %+v); want format 2 with its profile", m.Version, s, s.Flow)
	}
	old, err := parseMemCounts(strings.NewReader(memcountSample))
	if err != nil || old.Version != 1 || old.Segment(1).Flow != nil {
		t.Errorf("parseMemCounts(format 1) = %+v, %v; want version 1, no profile", old, err)
	}
}

// Format 3: the core, its L2, the branch model's and the locked and
// serialising instructions' counts, and a wide segment's outside counts.
const memcountSample3 = `memcount 3 l1d 32768 8 l1i 32768 8 llc 16777216 16 dtlb 64 4 line 64 page 4096 core zen2 warm 1 l2 524288 8 bpred 32:c:13:6:10:11:4:640:12:10:4
segment 1 windows 5 insns 41976411 l1d 9581834 360701 l1i 41976411 737 llc 104451 20470 dtlb 9581874 182219 l2 361438 104451
events 1 cond 4592105 cond_miss 9921 ind 0 ind_miss 0 ret 201123 ret_miss 201123 lock 7 serial 63
outside 1 insns 5000 l1d 900 90 l1i 5000 20 llc 100 3 dtlb 900 9 l2 110 100
oevents 1 cond 600 cond_miss 60 ind 4 ind_miss 1 ret 100 ret_miss 100 lock 30 serial 2 future 9
dexec 1 ffffffff81000000 4000
dexec 1 ffffffff81000010 1000
end segments 1 marks 5 5 1 0 1 1 armed_ns 2000000000 1500000000
`

func TestParseMemCountsCycleModel(t *testing.T) {
	m, err := parseMemCounts(strings.NewReader(memcountSample3))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Segment(1)
	wantEv := Events{Branches: true, Cond: 4592105, CondMiss: 9921, Ret: 201123, RetMiss: 201123, Lock: 7, Serial: 63}
	wantOut := Events{Branches: true, Cond: 600, CondMiss: 60, Ind: 4, IndMiss: 1, Ret: 100, RetMiss: 100, Lock: 30, Serial: 2}
	switch {
	case m.Version != 3 || m.Core != "zen2":
		t.Errorf("parseMemCounts() = version %d, core %q; want 3, zen2", m.Version, m.Core)
	case s == nil || s.L2 == nil || *s.L2 != (CacheCount{361438, 104451}) || s.Events == nil || *s.Events != wantEv:
		t.Errorf("segment %+v, events %+v; want the L2 and %+v", s, s.Events, wantEv)
	case s.Outside == nil || s.Outside.Insns != 5000 || s.Outside.L1D != (CacheCount{900, 90}) || s.Outside.L2 == nil ||
		s.Outside.Events == nil || *s.Outside.Events != wantOut || len(s.DExecs) != 2 || s.DExecs[0] != (PCCount{0xffffffff81000000, 4000}):
		t.Errorf("outside %+v (events %+v), dexecs %v; want the wide segment's counts", s.Outside, s.Outside.Events, s.DExecs)
	}
	for name, in := range map[string]string{
		"oevents without outside": "memcount 3 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\noevents 1 lock 1 serial 1\n",
		"dexec without outside":   "memcount 3 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\ndexec 1 ff 1\n",
		"events twice":            "memcount 3 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\nevents 1 lock 1 serial 1\nevents 1 lock 1 serial 1\n",
		"short outside":           "memcount 3 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\noutside 1 insns 1\n",
		"odd events":              "memcount 3 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\nevents 1 lock\n",
	} {
		if _, err := parseMemCounts(strings.NewReader(in)); err == nil {
			t.Errorf("parseMemCounts(%s) = nil error; want one", name)
		}
	}
}

func TestParseMemCountsRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":          "",
		"no model":       "segment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\n",
		"short segment":  "memcount 1 x\nsegment 1 windows 1\n",
		"unknown record": "memcount 1 x\nhello\n",
		"orphan pc":      "memcount 1 x\npc 3 ff 1 1 1 1\n",
		"bad number":     "memcount 1 x\nsegment 1 windows x insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\n",
		"bad version":    "memcount x y\n",
		"orphan exec":    "memcount 2 x\nexec 3 ff 1\n",
		"orphan call":    "memcount 2 x\ncall 3 ff fe 1\n",
		"short flow":     "memcount 2 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\nflow 1 call 1\n",
		"flow twice": "memcount 2 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\n" +
			"flow 1 call 0 icall 0 ret 0 jmp 0 ijmp 0 jcc 0 taken 0 other 0 rep 0 none 0 diverted 0\n" +
			"flow 1 call 0 icall 0 ret 0 jmp 0 ijmp 0 jcc 0 taken 0 other 0 rep 0 none 0 diverted 0\n",
		"odd special":  "memcount 2 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\nspecial 1 verw\n",
		"exec not hex": "memcount 2 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\nexec 1 zz 1\n",
	} {
		if _, err := parseMemCounts(strings.NewReader(in)); err == nil {
			t.Errorf("parseMemCounts(%s) = nil error; want one", name)
		}
	}
	var b strings.Builder
	b.WriteString("memcount 1 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\n")
	for range maxMemcountPCs + 1 {
		b.WriteString("pc 1 ff 1 1 1 1\n")
	}
	if _, err := parseMemCounts(strings.NewReader(b.String())); err == nil {
		t.Errorf("parseMemCounts(%d pc lines) = nil error; want the bound", maxMemcountPCs+1)
	}
}

func TestMemoryPluginArgs(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "memcount.so")
	c := Config{Kernel: "k", Initramfs: "i", RunDir: dir, Accel: wire.AccelIcount, MemoryPlugin: plugin}
	c.setDefaults()
	args := c.CommandLine()
	core, _ := CoreModelOf("")
	want := plugin + ",outfile=" + filepath.Join(dir, memcountFile) + ",core=default,warm=1,bpred=" + core.Branch.String()
	if i := slices.Index(args, "-plugin"); i < 0 || args[i+1] != want || !slices.Contains(args, memoryRTC) {
		t.Errorf("CommandLine() = %q; want -plugin %s and -rtc %s", args, want, memoryRTC)
	}
	c.NoCycleModel = true
	if args := c.CommandLine(); !slices.Contains(args, plugin+",outfile="+filepath.Join(dir, memcountFile)) {
		t.Errorf("CommandLine() without the cycle model = %q; want the plugin's own defaults (-plugin %s,outfile=…)", args, plugin)
	}
	c.NoCycleModel = false
	if i := slices.Index(args, "-accel"); i < 0 || args[i+1] != "tcg,tb-size=1024" {
		t.Errorf("CommandLine() = %q; want a code cache that the plugin's blocks never fill (-accel tcg,tb-size=1024)", args)
	}
	if plain := (Config{Kernel: "k", Initramfs: "i", RunDir: dir, Accel: wire.AccelIcount}).CommandLine(); !slices.Contains(plain, "tcg") {
		t.Errorf("CommandLine() without the plugin = %q; want QEMU's own code cache (-accel tcg)", plain)
	}
	var pe *MemoryPluginError
	if err := c.checkMemoryPlugin(); !errors.As(err, &pe) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkMemoryPlugin() of a missing plugin = %v; want a *MemoryPluginError wrapping ErrNotExist", err)
	}
	os.WriteFile(plugin, nil, 0o644)
	if err := c.checkMemoryPlugin(); err != nil {
		t.Errorf("checkMemoryPlugin() = %v; want nil", err)
	}
	c.Accel = wire.AccelKVM
	if err := c.checkMemoryPlugin(); err != nil || c.MemoryPlugin != "" || slices.Contains(c.CommandLine(), "-plugin") {
		t.Errorf("checkMemoryPlugin() under KVM = %v, plugin %q; want the plugin left out", err, c.MemoryPlugin)
	}
}

// builtMemoryPlugin is the plugin scripts/setup built, or a skip.
func builtMemoryPlugin(t *testing.T) string {
	t.Helper()
	path, tried := FindMemoryPlugin(os.Getenv("LPMBISECT_CACHE"))
	if path == "" {
		t.Skipf("no memory plugin at %s (run scripts/setup)", strings.Join(tried, " or "))
	}
	if _, err := exec.LookPath(DefaultQEMU); err != nil {
		t.Skip("no QEMU (run scripts/setup)")
	}
	return path
}

// TestMemoryPluginLoads loads the built plugin into Debian's QEMU (no
// machine, quit at once from the monitor): QEMU accepts it, its file
// has the model and end lines, and a bad argument makes QEMU refuse it.
func TestMemoryPluginLoads(t *testing.T) {
	plugin := builtMemoryPlugin(t)
	out := filepath.Join(t.TempDir(), memcountFile)
	run := func(arg string) (string, error) {
		cmd := exec.Command(DefaultQEMU, "-M", "none", "-nodefaults", "-display", "none", "-monitor", "stdio", "-plugin", plugin+","+arg)
		cmd.Stdin = strings.NewReader("quit\n")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if msg, err := run("outfile=" + out); err != nil {
		t.Fatalf("qemu -plugin %s: %v\n%s", plugin, err, msg)
	}
	m, err := readMemCounts(out)
	if err != nil || !m.Complete || !strings.HasPrefix(m.Model, "l1d 49152 12 l1i 32768 8 llc 2097152 16 dtlb 64 4") || len(m.Segments) != 0 {
		t.Errorf("ReadMemCounts() = %+v, %v; want the default model, complete, no segments", m, err)
	}
	if msg, err := run("outfile=" + out + ",l1d=48K:7"); err == nil || !strings.Contains(msg, "power-of-two") {
		t.Errorf("qemu -plugin with 48K 7-way L1D: %v\n%s; want QEMU to refuse it (no power-of-two sets)", err, msg)
	}
	for _, core := range coreModels {
		if msg, err := run(strings.Join(append([]string{"outfile=" + out}, core.PluginArgs(true)...), ",")); err != nil {
			t.Errorf("qemu -plugin with the %s core: %v\n%s", core.Name, err, msg)
			continue
		}
		m, err := readMemCounts(out)
		if err != nil || m.Version < 3 || m.Core != core.Name || !strings.Contains(m.Model, "bpred "+core.Branch.String()) {
			t.Errorf("ReadMemCounts() with the %s core = %+v, %v; want format 3 naming the core and its branch model", core.Name, m, err)
		}
	}
	if msg, err := run("outfile=" + out + ",bpred=32:x:13:6:10:11:4:640:12:10:4"); err == nil || !strings.Contains(msg, "bad argument bpred") {
		t.Errorf("qemu -plugin with a bad branch model: %v\n%s; want QEMU to refuse it", err, msg)
	}
}

// The plugin scripts/setup built under the user's cache directory is
// found whatever cache directory a run uses; one under the run's cache
// directory comes first.
func TestFindMemoryPlugin(t *testing.T) {
	user, run := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", user)
	if got, tried := FindMemoryPlugin(run); got != "" || len(tried) != 2 {
		t.Fatalf("FindMemoryPlugin(%s) = %q, %v; want nothing found in two places", run, got, tried)
	}
	built := DefaultMemoryPlugin(filepath.Join(user, "lpmbisect"))
	for _, p := range []string{built, DefaultMemoryPlugin(run)} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("ELF"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := FindMemoryPlugin(run); got != p {
			t.Errorf("FindMemoryPlugin(%s) = %q; want %s", run, got, p)
		}
	}
	if got, tried := FindMemoryPlugin(""); got != built || len(tried) != 1 {
		t.Errorf("FindMemoryPlugin(\"\") = %q, %v; want %s alone", got, tried, built)
	}
}

// TestPluginDecodesFlow compiles memplugin/decode_test.c, which runs the
// plugin's block-end decoding (memplugin/x86flow.h) on instructions as
// kernels have them, and checks each kind, target and special.
func TestPluginDecodesFlow(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (scripts/setup installs one)")
	}
	bin := filepath.Join(t.TempDir(), "decode_test")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-Werror", "-o", bin, filepath.Join("memplugin", "decode_test.c")).CombinedOutput(); err != nil {
		t.Fatalf("cc decode_test.c: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"call rel32":               "call|21||", // 5 bytes, then rel32 16
		"call *%rax":               "icall|0||",
		"call *%r11":               "icall|0||",
		"call *0x8(%rax)":          "icall|0||",
		"ret":                      "ret|0||",
		"ret $8":                   "ret|0||",
		"jmp rel32":                "jmp|0||", // a jump to itself
		"jmp rel8":                 "jmp|4||",
		"je rel8":                  "jcc|0||",
		"jne rel32":                "jcc|262||",
		"jmp *%rax":                "ijmp|0||",
		"notrack jmp *%rax":        "ijmp|0||",
		"jmp *0x10(%rip)":          "ijmp|0||",
		"rep stos %rax":            "rep|0||", // its target is itself: the next iteration
		"rep movsb":                "rep|0||",
		"iretq":                    "other|0||serial",
		"syscall":                  "other|0||",
		"ud2":                      "other|0||",
		"int3":                     "other|0||",
		"nop":                      "none|0||",
		"inc %eax":                 "none|0||", // ff /0, not a call
		"verw 0x0(%rip)":           "none|0|verw|serial",
		"lfence":                   "none|0|lfence|serial",
		"wrmsr":                    "none|0|wrmsr|serial",
		"sldt %eax":                "none|0||", // 0f 00 /0, not VERW
		"lock cmpxchg %ecx,(%rdx)": "none|0||lock",
		"lock incl (%rax)":         "none|0||lock",
		"xchg %rax,(%rdx)":         "none|0||lock", // locked without a prefix
		"xchg %eax,%edx":           "none|0||",
		"mfence":                   "none|0||serial",
		"cpuid":                    "none|0||serial",
		"mov %rax,%cr3":            "none|0||serial",
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, rest, _ := strings.Cut(line, "|")
		got[name] = rest
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: decoded %q; want %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("decode_test printed %d instructions; want %d", len(got), len(want))
	}
}

// TestPluginPredictsBranches compiles memplugin/bpred_test.c, which runs
// the plugin's branch model (memplugin/bpred.h) with each core's sizes on
// branch streams of known patterns, and checks what a predictor of that
// kind must do: a branch always or never taken, alternating, or of a short
// period or loop is predicted after warm-up; a random one half the time; a
// return within the stack's depth always, through an aligned return thunk
// always, through SRSO's Safe RET thunk never; nested deeper than the
// stack, a circular stack (Intel's) mispredicts the returns beyond its
// depth, a checked one (AMD's) predicts them as indirect branches; an
// indirect branch with one target, or alternating between two, is
// predicted, one among four random targets three times in four.
func TestPluginPredictsBranches(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (scripts/setup installs one)")
	}
	bin := filepath.Join(t.TempDir(), "bpred_test")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-Werror", "-o", bin, filepath.Join("memplugin", "bpred_test.c"), "-lm").CombinedOutput(); err != nil {
		t.Fatalf("cc bpred_test.c: %v\n%s", err, out)
	}
	for _, core := range coreModels {
		t.Run(core.Name, func(t *testing.T) {
			out, err := exec.Command(bin, core.Branch.String()).Output()
			if err != nil {
				t.Fatalf("bpred_test %s: %v", core.Branch, err)
			}
			rate := map[string]float64{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Split(line, "|")
				if f[0] == "hist" {
					t.Logf("%s: TAGE histories %s", core.Name, strings.Join(f[1:], ", "))
					continue
				}
				n, err1 := strconv.ParseFloat(f[1], 64)
				miss, err2 := strconv.ParseFloat(f[2], 64)
				if len(f) != 3 || err1 != nil || err2 != nil || n == 0 {
					t.Fatalf("bpred_test printed %q", line)
				}
				rate[f[0]] = miss / n
			}
			beyond := 0.0
			if !core.Branch.Checked {
				beyond = 8.0 / float64(core.Branch.RSB+8) // the 8 returns past the depth
			}
			for name, want := range map[string]struct{ lo, hi float64 }{
				"taken": {0, 0.001}, "not-taken": {0, 0.001}, "alternating": {0, 0.001}, "period5": {0, 0.001}, "loop10": {0, 0.001},
				"random": {0.45, 0.55}, "nested-within-depth": {0, 0}, "nested-beyond-depth": {beyond, beyond + 0.001},
				"return-thunk": {0, 0}, "safe-ret": {1, 1}, "indirect-one-target": {0, 0}, "indirect-alternating": {0, 0.001},
				"indirect-random4": {0.7, 0.8},
			} {
				r, ok := rate[name]
				if !ok || r < want.lo || r > want.hi {
					t.Errorf("%s: %s mispredicted %.4f of the time; want %g to %g", core.Name, name, r, want.lo, want.hi)
				}
			}
		})
	}
}

// Every CPU profile has a core for the plugin, and the default model's is
// today's caches: the plugin's own defaults.
func TestCoreModelPerProfile(t *testing.T) {
	for _, p := range append([]CPUProfile{{}}, CPUProfiles...) {
		core, ok := CoreModelOf(p.Name)
		if !ok || core.Name != p.Label() {
			t.Errorf("CoreModelOf(%q) = %q, %v; want the %s core", p.Name, core.Name, ok, p.Label())
		}
		c := Config{Kernel: "k", Initramfs: "i", RunDir: t.TempDir(), Accel: wire.AccelIcount, MemoryPlugin: "p.so", CPU: p}
		if args := strings.Join(c.pluginArgs(c.RunDir), " "); !strings.Contains(args, "core="+p.Label()) {
			t.Errorf("plugin arguments of a %s boot: %s; want its core", p.Label(), args)
		}
	}
	if len(coreModels) != len(CPUProfiles)+1 {
		t.Errorf("%d cores for %d profiles and the default", len(coreModels), len(CPUProfiles))
	}
	def, _ := CoreModelOf(DefaultCPUProfile)
	if def.L1D != (CacheGeometry{48 << 10, 12}) || def.LLC != (CacheGeometry{2 << 20, 16}) || def.L2.Size != 0 || len(def.PluginArgs(false)) != 0 {
		t.Errorf("the default core %+v; want the plugin's own caches, no L2, and no arguments without the cycle model", def)
	}
}

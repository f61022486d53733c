package measure

import (
	"context"
	"errors"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/initramfs"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestInsightDiff checks the hand-off of the guests' documents: programs
// and counts reach the block, a side without any source says so in one
// line, and a malformed document is a problem of its side, not a failure.
func TestInsightDiff(t *testing.T) {
	const bench = "LPMTrie/op=lookup/keys=random/entries=1000"
	doc := &wire.InsightDoc{
		Programs: []wire.ProgramInfo{{Benchmark: bench, Program: "lpm_lookup", TranslatedBytes: 560}},
		Counts:   []wire.CallCount{{Benchmark: bench, Function: "longest_prefix_match", Symbol: "longest_prefix_match.isra.0", Mechanism: wire.MechanismKprobe, Calls: 109840, Ops: 10000}},
	}
	gz, err := wire.EncodeInsight(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sides := []*Side{
		{Name: "A", Kernel: &kernel.Kernel{Image: dir + "/vmlinuz-a"}, Insight: gz},
		{Name: "B", Kernel: &kernel.Kernel{Image: dir + "/vmlinuz-b"}, Insight: []byte("not gzip")},
	}
	in := &Insight{Options: insight.Options{}, Guest: true}
	d := in.diff(sides, in.static(sides))
	if d == nil {
		t.Fatal("diff = nil; want a block")
	}
	if len(d.Programs) != 1 || d.Programs[0].A == nil || d.Programs[0].B != nil {
		t.Errorf("diff programs %+v; want A's program only", d.Programs)
	}
	if len(d.Counts) != 1 || !strings.Contains(d.Counts[0].Line, "10.98 (kprobe longest_prefix_match.isra.0) → not counted") {
		t.Errorf("diff counts %+v; want A's 10.98 calls per op", d.Counts)
	}
	if !strings.HasPrefix(d.A.Status, "no symbols") || d.Sizes != nil {
		t.Errorf("side A status %q, sizes %v; want no symbols and no size table", d.A.Status, d.Sizes)
	}
	if got := strings.Join(d.B.Problems, "; "); !strings.Contains(got, "guest insight: decode insight") {
		t.Errorf("side B problems %q; want the malformed document named", got)
	}
}

// TestInsightArmKeepsKallsymsOfStaticSides checks that a side whose
// symbols the host reads from a static source tells its guest to keep
// kallsyms, and a side with none (a Debian package without its -dbg
// package) does not. Any unstripped ELF stands in for the vmlinux here:
// a Go program with its symbol table (go test strips its own binary).
func TestInsightArmKeepsKallsymsOfStaticSides(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "unstripped")
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	build := exec.Command("go", "build", "-o", self, "main.go")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build an unstripped ELF: %v\n%s", err, out)
	}
	sides := []*Side{
		{Name: "A", Kernel: &kernel.Kernel{Image: dir + "/vmlinuz-a"}},
		{Name: "B", Kernel: &kernel.Kernel{Image: dir + "/vmlinuz-b"}},
	}
	in := &Insight{Guest: true}
	in.Given[0] = insight.Input{Vmlinux: self}
	static := in.static(sides)
	if static[0] == nil || static[1] != nil {
		t.Fatalf("static sources %v; want A's only", static)
	}
	runner := &Runner{Sides: sides}
	if err := in.arm(runner, static); err != nil {
		t.Fatal(err)
	}
	if !sides[0].StaticSymbols || sides[1].StaticSymbols {
		t.Errorf("StaticSymbols A %v, B %v; want A's kallsyms kept in its guest, B's sent", sides[0].StaticSymbols, sides[1].StaticSymbols)
	}
	if !slices.Contains(runner.GuestArgs, "lpmbisect.kallsyms=1") || !slices.Contains(runner.GuestArgs, "lpmbisect.insight=0") {
		t.Errorf("guest arguments %q; want the pass armed, kallsyms sent unless a side says otherwise", runner.GuestArgs)
	}
	off := &Insight{}
	runner = &Runner{Sides: sides}
	if err := off.arm(runner, static); err != nil || len(runner.GuestArgs) != 0 {
		t.Errorf("arm without the guest pass: %q, %v; want no arguments", runner.GuestArgs, err)
	}
}

// TestInsightOnAFleet checks that boots on a fleet skip the guest's pass,
// whose findings their jobs do not bring back, and that the caller's
// Insight is left as it was.
func TestInsightOnAFleet(t *testing.T) {
	var logged strings.Builder
	s := &Setup{Options: Options{Log: log.New(&logged, "", 0)}}
	in := &Insight{Guest: true, ProfilePeriod: insight.DefaultProfilePeriod, MemoryPlugin: "memcount.so"}
	if got := in.forSetup(s); got != in {
		t.Errorf("forSetup(local) = %+v; want the insight as given", got)
	}
	s.Remote = Local{}
	if got := in.forSetup(s); got == nil || got.Guest || got.ProfilePeriod != 0 || got.MemoryPlugin != "" || !in.Guest || !strings.Contains(logged.String(), "static sources only") || !strings.Contains(logged.String(), "profile is local only") {
		t.Errorf("forSetup(fleet) = %+v (given %+v), log %q; want no guest pass, the given one unchanged, a note", got, in, logged.String())
	}
	if got := (*Insight)(nil).forSetup(s); got != nil {
		t.Errorf("forSetup(none) = %+v; want none", got)
	}
}

// TestArmProfile checks that the profile pass is armed beside the
// insight pass at its period, and that a period the kernel would clamp
// is refused before any boot.
func TestArmProfile(t *testing.T) {
	sides := []*Side{{Name: "A"}, {Name: "B"}}
	runner := &Runner{Sides: sides}
	in := &Insight{Guest: true, ProfilePeriod: insight.DefaultProfilePeriod, MemoryPlugin: "memcount.so"}
	if err := in.arm(runner, [2]*insight.Side{}); err != nil || !slices.Contains(runner.GuestArgs, "lpmbisect.profile=20011") || !slices.Contains(runner.GuestArgs, "lpmbisect.insight=0") {
		t.Errorf("arm: %q, %v; want the insight pass armed with lpmbisect.profile=20011", runner.GuestArgs, err)
	}
	in.ProfilePeriod = 5000
	if err := in.arm(&Runner{Sides: sides}, [2]*insight.Side{}); err == nil || !strings.Contains(err.Error(), "profile") {
		t.Errorf("arm with a 5000 ns period = %v; want an error naming the profile", err)
	}
}

// TestNoInsightSideBootsWithoutThePass checks that an armed pass runs in
// the first boot of each side but one that opts out (nightly's
// reference), and in no later boot.
func TestNoInsightSideBootsWithoutThePass(t *testing.T) {
	ref := &Side{Name: "A", Kernel: &kernel.Kernel{Image: "ref"}, Image: &initramfs.Image{Path: "ref.cpio"}, NoInsight: true}
	tip := &Side{Name: "B", Kernel: &kernel.Kernel{Image: "tip"}, Image: &initramfs.Image{Path: "tip.cpio"}}
	r := &Runner{Sides: []*Side{ref, tip}, started: map[string]int{}, GuestArgs: []string{"lpmbisect.insight=0"}, RunDir: t.TempDir()}
	armed := func(s *Side) bool { return slices.Contains(r.job(s, 0).Config.KernelArgs, "lpmbisect.insight=1") }
	if armed(ref) || !armed(tip) || armed(tip) {
		t.Error("the pass ran in the reference's first boot, missed the tip's first, or ran in the tip's second")
	}
}

// QEMU dying in the boot that loads the memory plugin is not the kernel's
// failure: the run goes on, the memory pass is given up with a reason, and
// the side's next boot runs the insight pass without the plugin.
func TestPluginFaultRunsTheInsightPassAgain(t *testing.T) {
	var armed, plugins []string
	faulted := false
	boot := func(_ context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
		side := cfg.Kernel[len("/k/"):]
		// The boot that loads the plugin, and it alone, tells its guest so
		// (lpmbisect.memory=2: the memory pass, its exact profile and its
		// deferred work pass), in a command line of the same length.
		want := wire.MemoryArg
		if cfg.MemoryPlugin != "" {
			want = "lpmbisect.memory=2"
		}
		if !slices.Contains(cfg.KernelArgs, want) || len(want) != len(wire.MemoryArg) {
			t.Errorf("boot of %s with plugin %q: arguments %q; want %s", side, cfg.MemoryPlugin, cfg.KernelArgs, want)
		}
		if slices.Contains(cfg.KernelArgs, "lpmbisect.insight=1") {
			armed = append(armed, side)
			if cfg.MemoryPlugin != "" {
				plugins = append(plugins, side)
			}
		}
		if side == "A" && cfg.MemoryPlugin != "" && !faulted {
			faulted = true
			return &vmrunner.Result{Outcome: vmrunner.QEMUError, Detail: "QEMU failed: ERROR:../../plugins/core.c:473:qemu_plugin_vcpu_mem_cb: code should not be reached",
				Stream: wire.Decode(nil), Accel: wire.AccelTCG}, nil
		}
		var log []string
		return fakeBoot(&log, nil)(context.Background(), cfg)
	}
	r := &Runner{Seed: 1, Sides: testSides(), Exec: Local{Boot: boot}, RunDir: t.TempDir(), GuestArgs: []string{"lpmbisect.insight=0", wire.MemoryArg},
		VM: vmrunner.Config{Accel: wire.AccelIcount}, insight: &Insight{MemoryPlugin: "/p/memcount.so"}}
	if err := r.Measure(context.Background(), 2); err != nil {
		t.Fatalf("Measure with a plugin fault on A: %v; want the run to go on", err)
	}
	sum := r.Summary()
	if sum.OK["A"] != 2 || sum.OK["B"] != 2 || len(sum.Failed) != 1 {
		t.Errorf("boots ok %v, %d failed; want 2 a side and the faulted boot noted", sum.OK, len(sum.Failed))
	}
	slices.Sort(armed)
	slices.Sort(plugins)
	if !slices.Equal(armed, []string{"A", "A", "B"}) || !slices.Equal(plugins, []string{"A", "B"}) {
		t.Errorf("insight pass armed in boots of %v, the plugin loaded in %v; want A twice (the second without the plugin) and B once with it", armed, plugins)
	}
	a, b := r.Sides[0], r.Sides[1]
	if !strings.Contains(a.MemoryProblem, "code should not be reached") || !strings.Contains(a.MemoryProblem, "memory pass is left out") || b.MemoryProblem != "" {
		t.Errorf("memory problems A %q, B %q; want A's to name QEMU's fault and say the pass is left out", a.MemoryProblem, b.MemoryProblem)
	}

	// The kernel's own failure in that boot still stops the run.
	r = &Runner{Seed: 1, Sides: testSides(), Exec: Local{Boot: func(_ context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
		return &vmrunner.Result{Outcome: vmrunner.Panic, Detail: "Kernel panic", Stream: wire.Decode(nil), Accel: wire.AccelTCG}, nil
	}}, RunDir: t.TempDir(), GuestArgs: []string{"lpmbisect.insight=0"}, VM: vmrunner.Config{Accel: wire.AccelIcount}, insight: &Insight{MemoryPlugin: "/p/memcount.so"}}
	if err := r.Measure(context.Background(), 2); !errors.Is(err, ErrBootFailed) {
		t.Errorf("Measure with a panic in the plugin's boot: %v; want ErrBootFailed", err)
	}
}

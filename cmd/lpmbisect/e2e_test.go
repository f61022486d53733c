package main

// End-to-end tests: the real CLI boots real Debian kernels under TCG with the
// real guest. They need QEMU and scripts/fetch-kernels; without them they
// skip, except under LPMBISECT_REQUIRE_VM=1 (CI), where they fail.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/flow/calibrate"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/guestfaults"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// vmArgs are the flags every end-to-end run needs: TCG (our /dev/kvm does
// not run guests), the freshly built guest, a private cache.
func vmArgs(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testkernels.Unavailable(t, "qemu-system-x86_64 not installed (run scripts/setup)")
	}
	return []string{"--guest", testguest.Path(t), "--cache-dir", sharedCache(t), "--run-dir", t.TempDir()}
}

// sharedCache keeps unpacked kernels across the tests of this process.
var cacheDir string

var cacheOnce sync.Once

func sharedCache(t *testing.T) string {
	cacheOnce.Do(func() {
		d, err := os.MkdirTemp("", "lpmbisect-e2e-cache-")
		if err != nil {
			t.Fatal(err)
		}
		cacheDir = testkernels.ShareCache(t, d)
	})
	return cacheDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cacheDir != "" {
		if left := qemuLeft(); left != "" {
			fmt.Fprintf(os.Stderr, "QEMU processes left running after the tests: %s\n", left)
			code = 1
		}
		os.RemoveAll(cacheDir)
	}
	os.Exit(code)
}

// parallelBoots counts the tests that boot beside others (bootsInParallel).
var parallelBoots atomic.Int32

// bootsInParallel runs a test that boots under icount beside the other such
// tests (t.Parallel): instruction counts do not care about the load. While
// any runs, assertNoQEMULeft cannot tell whose QEMU a process is, so the
// check of no QEMU left waits for TestMain, after every test.
func bootsInParallel(t *testing.T) {
	t.Parallel()
	parallelBoots.Add(1)
	t.Cleanup(func() { parallelBoots.Add(-1) })
}

func readResultsFile(t *testing.T, path string) []*benchfmt.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := measure.ReadResults(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func parseResults(t *testing.T, text string) []*benchfmt.Result {
	t.Helper()
	res, err := measure.ReadResults(strings.NewReader(text), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// assertNoQEMULeft checks that no QEMU booting a kernel from this test
// process's cache is still running.
func assertNoQEMULeft(t *testing.T) {
	t.Helper()
	if parallelBoots.Load() > 0 {
		return // TestMain checks once every test has ended
	}
	if s := qemuLeft(); s != "" {
		t.Errorf("QEMU processes left running: %s", s)
	}
}

// qemuLeft lists the QEMU processes booting a kernel from this test
// process's cache.
func qemuLeft() string {
	out, _ := exec.Command("pgrep", "-f", "qemu-system-x86_64 .*"+regexp.QuoteMeta(cacheDir)).Output()
	return strings.TrimSpace(string(out))
}

func TestRunBothDebianKernelsOverVirtio(t *testing.T) {
	args := vmArgs(t)
	for _, k := range []struct{ pkg, release string }{
		{testkernels.Debian61, testkernels.Release61},   // virtio as modules, loaded by the guest
		{testkernels.Debian612, testkernels.Release612}, // virtio built in
	} {
		t.Run(k.release, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "tcg", "--samples", "3"}, args...), testkernels.Deb(t, k.pkg))...)
			if code != 0 {
				t.Fatalf("lpmbisect run %s: exit %d\n%s", k.release, code, stderr)
			}
			results := parseResults(t, stdout)
			keys := map[string]bool{}
			for _, r := range results {
				keys[string(r.Name)] = true
				if got := r.GetConfig("kernel"); got != k.release {
					t.Errorf("result kernel = %q; want %q", got, k.release)
				}
				if got := r.GetConfig("channel"); got != "virtio" {
					t.Errorf("result channel = %q; want virtio", got)
				}
				if got := r.GetConfig("accel"); got != "tcg" {
					t.Errorf("result accel = %q; want tcg", got)
				}
				v, ok := r.Value("sec/op")
				if !ok || !(v > 1e-9 && v < 1e-4) {
					t.Errorf("%s = %v sec/op; want a plausible lookup time", r.Name, v)
				}
			}
			for _, want := range []string{"LPMTrie/op=lookup/keys=random/entries=10000", "LPMTrie/op=lookup/keys=sequential/entries=10000"} {
				if !keys[want] {
					t.Errorf("no results for %s; got %v", want, keys)
				}
			}
			if len(results) != 6 {
				t.Errorf("got %d results; want 6 (2 benchmarks × 3 samples)", len(results))
			}
		})
	}
	assertNoQEMULeft(t)
}

func TestRunSerialFallback(t *testing.T) {
	args := vmArgs(t)
	// Debian 6.1 has virtio_console as a module: without modules in the
	// initramfs the guest has no virtio port and must use ttyS1.
	code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "tcg", "--samples", "2", "--no-modules"}, args...), testkernels.Deb(t, testkernels.Debian61))...)
	if code != 0 {
		t.Fatalf("lpmbisect run --no-modules: exit %d\n%s", code, stderr)
	}
	results := parseResults(t, stdout)
	if len(results) == 0 {
		t.Fatalf("no results over the serial fallback\n%s", stderr)
	}
	for _, r := range results {
		if got := r.GetConfig("channel"); got != "serial" {
			t.Errorf("result channel = %q; want serial", got)
		}
	}
	if !strings.Contains(stderr, "over serial") {
		t.Errorf("stderr does not say results came over serial:\n%s", stderr)
	}
}

func TestAutoFallsBackFromBrokenKVM(t *testing.T) {
	args := vmArgs(t)
	start := time.Now()
	code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "auto", "--samples", "1"}, args...), testkernels.Deb(t, testkernels.Debian612))...)
	if code != 0 {
		t.Fatalf("lpmbisect run --accel auto: exit %d\n%s", code, stderr)
	}
	accel := parseResults(t, stdout)[0].GetConfig("accel")
	lines := regexp.MustCompile(`(?m)^lpmbisect: (warning: .*KVM.*|accel auto: .*)$`).FindAllString(stderr, -1)
	if len(lines) != 1 {
		t.Fatalf("want exactly one line about the accelerator choice; got %q\n%s", lines, stderr)
	}
	switch accel {
	case "icount":
		// Where /dev/kvm opens but guests do not run: say why, from the
		// probe (now, or kept from an earlier run).
		if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
			f.Close()
			if !strings.Contains(lines[0], "/dev/kvm opens, but KVM does not run guests here: ") {
				t.Errorf("fell back to icount with a /dev/kvm that opens, saying %q; want why KVM does not run guests", lines[0])
			}
		}
		if !strings.HasSuffix(lines[0], "; using icount: instruction counts, deterministic") {
			t.Errorf("auto chose icount, saying %q; want why and what icount gives", lines[0])
		}
		t.Logf("auto chose icount: %s (%s to the end of the run)", lines[0], time.Since(start).Round(time.Second))
	case "kvm":
		t.Logf("auto chose KVM: this machine runs guests under KVM")
	default:
		t.Errorf("results accel = %q; want icount or kvm (auto never picks TCG wall time)", accel)
	}
}

func TestExplicitKVMFailsClearly(t *testing.T) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no /dev/kvm here; the broken-KVM case cannot happen")
	}
	f.Close()
	args := vmArgs(t)
	code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "kvm", "--samples", "1"}, args...), testkernels.Deb(t, testkernels.Debian612))...)
	if code == 0 {
		t.Skipf("KVM works on this machine (accel %s)", parseResults(t, stdout)[0].GetConfig("accel"))
	}
	// Refused before anything runs, by the probe or its kept verdict,
	// saying why and which accelerator to ask for instead.
	if code != exitInfra || !strings.Contains(stderr, "lpmbisect: KVM unusable: /dev/kvm opens, but KVM does not run guests here: ") ||
		!strings.Contains(stderr, "(use --accel icount, or --accel auto, which chooses icount here by itself)") {
		t.Errorf("lpmbisect run --accel kvm on a broken KVM: exit %d; want %d with a message saying why and naming the way out\n%s", code, exitInfra, stderr)
	}
	assertNoQEMULeft(t)
}

func TestIcountIsDeterministic(t *testing.T) {
	args := vmArgs(t)
	code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "icount", "--boots", "2", "--samples", "3", "--bench", "LPMTrie/op=lookup/keys=random"}, args...), testkernels.Deb(t, testkernels.Debian612))...)
	if code != 0 {
		t.Fatalf("lpmbisect run --accel icount: exit %d\n%s", code, stderr)
	}
	results := parseResults(t, stdout)
	var values []float64
	for _, r := range results {
		v, ok := r.Value("insn/op")
		if !ok {
			t.Fatalf("result %s has no insn/op value: %v", r.Name, r.Values)
		}
		values = append(values, v)
	}
	if len(values) != 6 {
		t.Fatalf("got %d icount samples; want 6", len(values))
	}
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	// Within the bound the deterministic rule decides by without a
	// calibration. It was 0.1 % here when boots took five samples; with
	// the tick off the local APIC (vmrunner's icountBootWork) one CI run's
	// six samples spread 0.1097 % (829.34 to 830.25).
	if spread := (hi - lo) / lo; spread > calibrate.DefaultBound {
		t.Errorf("icount samples spread %.4f%% (%v); want within %g%%", spread*100, values, calibrate.DefaultBound*100)
	}
	t.Logf("icount insn/op over 2 boots: %v", values)
}

// TestReadmeFirstCommand runs the README's first command as it stands
// (compare of the two Debian kernels, every default: --accel auto), with
// only this test's guest and cache: the accelerator is decided once,
// before anything is planned, whatever /dev/kvm does here (missing, or
// opening and failing every kernel, as kvm-pvm does), and every table of
// the timed benchmarks has one unit. The verdict is then kept for this
// host: what the host offers says so, and the next run boots nothing to
// decide.
func TestReadmeFirstCommand(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	code, stdout, stderr := runCLI(t, append(append([]string{"compare"}, args...),
		testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612))...)
	if code != exitOK {
		t.Fatalf("lpmbisect compare 6.1 6.12: exit %d; want %d\n%s\n%s", code, exitOK, stdout, stderr)
	}
	lines := regexp.MustCompile(`(?m)^lpmbisect: accel auto: .*$`).FindAllString(stderr, -1)
	if len(lines) != 1 {
		t.Fatalf("want one line saying what auto chose; got %q\n%s", lines, stderr)
	}
	t.Logf("%s", lines[0])
	kvmOpens := false
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
		f.Close()
		kvmOpens = true
	}
	if strings.Contains(lines[0], "using KVM") {
		t.Logf("KVM runs these kernels here: wall-clock verdicts, not asserted")
		if strings.Contains(stdout, "insn/op") {
			t.Errorf("a run decided for KVM reports instruction counts:\n%s", stdout)
		}
		return
	}
	if !strings.HasSuffix(lines[0], "; using icount: instruction counts, deterministic") ||
		kvmOpens && !strings.Contains(lines[0], "/dev/kvm opens, but KVM does not run guests here: ") {
		t.Errorf("auto chose icount saying %q; want why (/dev/kvm opens here: %v)", lines[0], kvmOpens)
	}
	for _, keys := range []string{"random", "sequential"} {
		want := regexp.MustCompile(`(?m)^  LPMTrie/op=lookup/keys=` + keys + `/entries=10000: -[0-9.]+% insn/op \(better\), DIFFERENT \(deterministic rule, jitter bound ±0\.2%\), 2\+2 boots(; .* \(exact\))?$`)
		if !want.MatchString(stdout) {
			t.Errorf("compare's headline lacks the %s lookups DIFFERENT in insn/op at 2+2 boots:\n%s", keys, stdout)
		}
	}
	// One unit for the timed benchmarks: no wall-clock table beside the
	// instruction counts, no boot run under another accelerator.
	if strings.Contains(stdout, "sec/op") || strings.Contains(stdout, "ns/op") || strings.Contains(stderr, "(kvm)") || strings.Contains(stderr, "(tcg)") {
		t.Errorf("an icount run shows wall-clock units or boots:\n%s\n%s", stdout, stderr)
	}
	if n := strings.Count(stderr, "(icount): ok"); n != 4 {
		t.Errorf("%d icount boots ok; want 4 (2+2)\n%s", n, stderr)
	}
	// The verdict is kept for this host: nothing boots to decide again.
	if kvmOpens {
		code, out, _ := runCLI(t, "host", "--cache-dir", sharedCache(t))
		if code != exitOK || !strings.Contains(out, "kept from the probe of") || !regexp.MustCompile(`(?m)^auto +icount$`).MatchString(out) {
			t.Errorf("lpmbisect host after the compare: exit %d; want the verdict kept, auto icount:\n%s", code, out)
		}
	}
	assertNoQEMULeft(t)
}

func TestCompareDebianKernels(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	out := filepath.Join(t.TempDir(), "ab.txt")
	html := filepath.Join(t.TempDir(), "ab.html")
	// Instruction counts: the direction and significance of the change do not
	// depend on how busy the machine is (wall time under TCG does; the
	// README's demo shows it on a quiet machine). The controls run too. The
	// documented jitter bounds decide from two boots a side.
	// The first boot of each side also runs the guest's insight pass.
	// The profile pass has tests of its own (profile_e2e_test.go).
	code, stdout, stderr := runCLI(t, append(append([]string{"compare", "--accel", "icount", "--no-profile", "--entries", "1000",
		"--bench", "LPMTrie/op=lookup/keys=random", "--format", "json", "--html", html, "--out", out}, args...),
		testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612))...)
	if code != exitOK {
		t.Fatalf("lpmbisect compare 6.1 6.12: exit %d; want %d (6.12 is faster: no regression)\n%s\n%s", code, exitOK, stdout, stderr)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("compare --format json: %v\n%s", err, stdout)
	}
	if doc.A.Kernel != testkernels.Release61 || doc.B.Kernel != testkernels.Release612 || doc.EnvironmentDrift {
		t.Errorf("report sides %+v %+v drift %v; want 6.1 vs 6.12 without environment drift", doc.A, doc.B, doc.EnvironmentDrift)
	}
	var lookup *report.Row
	controls := 0
	for i, r := range doc.Rows {
		if r.Control {
			controls++
		}
		if r.Benchmark == "LPMTrie/op=lookup/keys=random/entries=1000" && !r.Exact {
			lookup = &doc.Rows[i]
		}
	}
	if lookup == nil || controls == 0 {
		t.Fatalf("report rows %v: want the lookup and the controls", doc.Rows)
	}
	if lookup.Verdict != compare.Different || lookup.DeltaPct == nil || *lookup.DeltaPct >= 0 {
		t.Errorf("lookup verdict %v, delta %v; want DIFFERENT and negative (6.12 faster)", lookup.Verdict, lookup.DeltaPct)
	}
	if lookup.Rule != compare.RuleDeterministic || lookup.Bound <= 0 || lookup.A.Boots != compare.DeterministicBoots {
		t.Errorf("lookup rule %q, bound %v after %d boots; want the deterministic rule with a bound, decided from %d boots", lookup.Rule, lookup.Bound, lookup.A.Boots, compare.DeterministicBoots)
	}
	t.Logf("6.1 → 6.12 random lookup: %.1f → %.1f %s (%+.1f%%, p=%.4f), %s after %d+%d boots",
		lookup.A.Center, lookup.B.Center, lookup.Unit, *lookup.DeltaPct, lookup.P, lookup.Verdict, lookup.A.Boots, lookup.B.Boots)
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "Why it changed") {
		t.Errorf("--html %s: %v; want a report with SVG plots and the insight block", html, err)
	}
	checkInsight(t, doc.Insight)
	// Each side's boot cost by phase, from the boots' own marks: the
	// insight pass apart, on one boot a side.
	for i, c := range doc.Meta.BootCost {
		if c == nil || c.Boots != lookup.A.Boots || len(c.Phases) < 4 || c.Phases[0].Phase != wire.PhaseToInit ||
			c.Phases[len(c.Phases)-1].Phase != wire.PhaseAll || !strings.Contains(c.String(), "insight ") {
			t.Errorf("boot cost of side %c: %+v; want the phases of %d boots, the insight pass on one", "AB"[i], c, lookup.A.Boots)
			continue
		}
		t.Logf("boot cost %c: %s", "AB"[i], c)
	}
	// stat renders the block kept beside the results.
	if code, stdout, stderr := runCLI(t, "stat", out); code != exitOK || !strings.Contains(stdout, "trie_lookup_elem no longer calls longest_prefix_match.isra.0") {
		t.Errorf("lpmbisect stat %s: exit %d; want %d and the insight block\n%s\n%s", out, code, exitOK, stdout, stderr)
	}

	// The raw file holds both sides, one boot of each per round, readable
	// by benchfmt. Boots are written as they end, and the first boot of
	// each side, with the insight pass, ends later: so compare the boots
	// in the order of their numbers.
	results := readResultsFile(t, out)
	var order []string
	for _, r := range results {
		if s := r.GetConfig("side") + r.GetConfig("boot"); len(order) == 0 || order[len(order)-1] != s {
			order = append(order, s)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i][1:] < order[j][1:] })
	if len(order)%2 != 0 || len(order) < 2*compare.DeterministicBoots {
		t.Fatalf("boot order %v; want rounds of one boot per side, at least %d", order, compare.DeterministicBoots)
	}
	for i := 0; i < len(order); i += 2 {
		round := map[string]bool{order[i]: true, order[i+1]: true}
		if n := fmt.Sprint(i/2 + 1); !round["A"+n] || !round["B"+n] {
			t.Errorf("boot order %v: round %s is not one boot of each side", order, n)
		}
	}
	assertNoQEMULeft(t)
}

// checkInsight checks the insight block of Debian 6.1 → 6.12 from the
// guests' kallsyms: 6.12's trie_lookup_elem no longer calls
// longest_prefix_match.isra.0, which 6.1's calls once per trie node on the
// path of each XDP lookup (kprobe), and 6.12's never.
func checkInsight(t *testing.T, in *report.InsightDocument) {
	t.Helper()
	if in == nil {
		t.Fatal("compare --format json: no insight block")
	}
	// Icount boots the kernel's ELF through PVH, which has no KASLR: the
	// offset is 0 there, and the symbols still come from the guest.
	for _, s := range []report.InsightSide{in.A, in.B} {
		if s.Symbols == nil || s.Symbols.Kind != "kallsyms" {
			t.Errorf("insight side %+v; want symbols from the guest's kallsyms", s)
		}
	}
	removed := false
	for _, c := range in.CallChanges {
		removed = removed || c.Function == "trie_lookup_elem" && c.Callee == "longest_prefix_match.isra.0" && c.Kind == "removed"
	}
	if !removed {
		t.Errorf("insight call changes %+v; want trie_lookup_elem no longer calling longest_prefix_match.isra.0", in.CallLines)
	}
	perOp := func(cs []wire.CallCount) (float64, bool) {
		var calls, ops uint64
		for _, c := range cs {
			if c.Mechanism != wire.MechanismKprobe {
				return 0, false
			}
			calls, ops = calls+c.Calls, c.Ops
		}
		return float64(calls) / float64(ops), ops > 0
	}
	found := false
	for _, row := range in.Counts {
		if row.Function != "longest_prefix_match" || !strings.HasPrefix(row.Benchmark, "LPMTrie/op=lookup/") {
			continue
		}
		found = true
		a, okA := perOp(row.A)
		b, okB := perOp(row.B)
		// 1000 dense /32 keys: a random key's leaf lies 9 to 11 nodes
		// deep, 10.984 on average, one call per node.
		if !okA || !okB || a < 9 || a > 11 || b != 0 {
			t.Errorf("%s: longest_prefix_match calls per lookup %v (%v) → %v (%v); want 9–11 by kprobe on 6.1, 0 on 6.12", row.Benchmark, a, okA, b, okB)
		}
		t.Logf("%s", row.Line)
	}
	if !found {
		t.Errorf("insight counts %v; want longest_prefix_match per lookup", in.CountLines)
	}
	if len(in.Programs) == 0 || in.Programs[0].A == nil || in.Programs[0].A.TranslatedBytes == 0 {
		t.Errorf("insight programs %v; want the benchmark programs' sizes", in.ProgramLines)
	}
}

// TestInsightPassKeepsTimedNumbers compares Debian 6.12 with itself under
// icount: the first boot of each side runs the insight pass (and its
// profile pass) after its samples, the second does not. Every row must be SAME, and the controls,
// whose instruction counts repeat to the last digit from boot to boot,
// must be the same to the last digit with and without the pass. (Lookups
// differ by ~0.01 % between any two boots, pass or not: 600.50 and 600.56
// insn/op in two boots without it.)
func TestInsightPassKeepsTimedNumbers(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	deb := testkernels.Deb(t, testkernels.Debian612)
	out := filepath.Join(t.TempDir(), "self.txt")
	code, stdout, stderr := runCLI(t, append(append([]string{"compare", "--accel", "icount", "--samples", "2", "--rounds", "5", "--entries", "1000",
		"--no-memory", "--bench", "LPMTrie/op=lookup/keys=sequential", "--format", "json", "--out", out}, args...), deb, deb)...)
	if code != exitOK {
		t.Fatalf("compare 6.12 6.12: exit %d; want %d\n%s\n%s", code, exitOK, stdout, stderr)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("compare --format json: %v\n%s", err, stdout)
	}
	for _, r := range doc.Rows {
		if r.Verdict != compare.Same {
			t.Errorf("self-compare %s: %v; want SAME", r.Benchmark, r.Verdict)
		}
	}
	if len(doc.Rows) < 2 {
		t.Errorf("self-compare rows %+v; want the lookup and the controls", doc.Rows)
	}
	if doc.Insight == nil || len(doc.Insight.Counts) == 0 {
		t.Errorf("self-compare: insight %+v; want the guest pass's counts", doc.Insight)
	}
	// The first boot of each side ran the profile pass too (on by
	// default): two profiles of one image.
	profiled := false
	for i := range doc.Insight.Profiles {
		if p := &doc.Insight.Profiles[i]; p.Benchmark == "LPMTrie/op=lookup/keys=sequential/entries=1000" {
			profiled = true
			checkProfileRepeats(t, p)
		}
	}
	if !profiled {
		t.Errorf("self-compare: profiles %+v; want the lookup's", doc.Insight.Profiles)
	}
	values := map[string][]float64{} // side+boot → the controls' values in order
	for _, r := range readResultsFile(t, out) {
		if strings.Contains(string(r.Name), "op=lookup") {
			continue
		}
		k := r.GetConfig("side") + r.GetConfig("boot")
		values[k] = append(values[k], r.Values[0].Value)
	}
	// The same to within two steps of the guest's two decimals: a timer
	// tick that lands in a sample's loop moves the random-key baseline by
	// one (83.06 or 83.07 insn/op), with the pass or without it.
	const step = 0.01
	for _, side := range []string{"A", "B"} {
		with, without := values[side+"1"], values[side+"2"]
		same := len(with) > 0 && len(with) == len(without)
		for i := 0; same && i < len(with); i++ {
			same = math.Abs(with[i]-without[i]) <= 2*step+1e-9
		}
		if !same {
			t.Errorf("side %s: control samples of the boot with the insight pass %v, without %v; want the same, to two steps of 0.01", side, with, without)
		}
	}
	t.Logf("6.12 controls, boot with the pass %v, without %v", values["A1"], values["A2"])
	assertNoQEMULeft(t)
}

func TestCompareFixedSizeIsInconclusive(t *testing.T) {
	args := vmArgs(t)
	deb := testkernels.Deb(t, testkernels.Debian612)
	// Two boots per side and no more: too few for any verdict of the
	// significance test (--rule statistical: the deterministic rule would
	// decide SAME), so the outcome is inconclusive (exit 3), decided after
	// the last boot.
	code, stdout, stderr := runCLI(t, append(append([]string{"compare", "--no-insight", "--accel", "icount", "--rule", "statistical", "--boots", "2", "--max-boots", "2", "--samples", "2", "--rounds", "2",
		"--no-controls", "--bench", "LPMTrie/op=lookup/keys=random", "--format", "markdown"}, args...), deb, deb)...)
	if code != exitInconclusive {
		t.Fatalf("compare with 2 boots per side: exit %d; want %d (inconclusive)\n%s\n%s", code, exitInconclusive, stdout, stderr)
	}
	if !strings.Contains(stdout, "UNKNOWN") || !strings.Contains(stdout, "INCONCLUSIVE") {
		t.Errorf("markdown report lacks UNKNOWN / INCONCLUSIVE:\n%s", stdout)
	}
}

// TestComparePairedTCG runs a paired compare of the two Debian kernels
// under --accel tcg (auto never picks a wall clock where KVM does not
// work, and icount is never paired): both VMs of a pair boot side by side
// (6.1 loading its virtio modules, 6.12 with them built in), then take
// their steps in turn on one host CPU.
func TestComparePairedTCG(t *testing.T) {
	args := vmArgs(t)
	out := filepath.Join(t.TempDir(), "ab.txt")
	code, stdout, stderr := runCLI(t, append(append([]string{"compare", "--no-insight", "--paired", "--accel", "tcg", "--boots", "2", "--max-boots", "2", "--samples", "2", "--rounds", "2",
		"--no-controls", "--bench", "LPMTrie/op=lookup/keys=sequential", "--format", "json", "--verbose", "--out", out}, args...),
		testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612))...)
	assertNoQEMULeft(t)
	// Two pairs cannot decide anything (SAME needs 6): inconclusive.
	if code != exitInconclusive {
		t.Fatalf("paired compare with 2 pairs: exit %d; want %d\n%s\n%s", code, exitInconclusive, stdout, stderr)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, stdout)
	}
	if !doc.Paired || len(doc.Rows) != 1 || doc.Rows[0].Pairs != 2 {
		t.Errorf("JSON report: paired %v, rows %d; want a paired report with one row of 2 pairs\n%s", doc.Paired, len(doc.Rows), stdout)
	}
	// 2 pairs × 2 VMs × (2 steps for the benchmark + 1 before the end),
	// unless a guest failed (Debian 6.12 has panicked once under TCG):
	// its pair then runs again, with more steps and a pair number skipped.
	retried := strings.Contains(stderr, "): panic:") || strings.Contains(stderr, "failed boot")
	if want := "paired: 2 complete pairs on host CPU "; !strings.Contains(stderr, want) || !retried && !strings.Contains(stderr, ", 12 steps taken in turn") {
		t.Errorf("stderr lacks %q… 12 steps taken in turn:\n%s", want, stderr)
	}
	seen := map[string]int{}
	for _, r := range readResultsFile(t, out) {
		seen[r.GetConfig("side")+r.GetConfig("pair")]++
		if r.GetConfig("accel") != "tcg" {
			t.Errorf("result accel = %q; want tcg", r.GetConfig("accel"))
		}
	}
	complete := 0
	for pair := 1; pair <= 4; pair++ {
		if a, b := seen[fmt.Sprint("A", pair)], seen[fmt.Sprint("B", pair)]; a == 2 && b == 2 {
			complete++
		} else if a+b > 0 && (!retried || a+b > 2) {
			t.Errorf("results of pair %d: A %d, B %d; want 2 samples each, or a side of a retried pair (%v)", pair, a, b, seen)
		}
	}
	if complete != 2 {
		t.Errorf("%d complete pairs in the results; want 2 (%v)", complete, seen)
	}
}

// TestSecondModeFallsBack compares the Debian 6.12 image with itself under
// icount while a test-only guest fault puts about half the boots (by the
// parity of the second they boot at) in a second mode 0.5 % higher: beyond
// the jitter bound, inside the minimum effect. A side whose boots span both
// modes must be decided by the statistical rule, and nothing may be
// DIFFERENT.
func TestSecondModeFallsBack(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	deb := testkernels.Deb(t, testkernels.Debian612)
	out := filepath.Join(t.TempDir(), "results.txt")
	code, stdout, stderr := runCLI(t, append(append([]string{"compare", "--no-insight", "--accel", "icount", "--append", guestfaults.Arg(guestfaults.Bimodal),
		"--boots", "4", "--max-boots", "4", "--samples", "2", "--rounds", "3", "--entries", "1000", "--no-controls",
		"--bench", "LPMTrie/op=lookup/keys=sequential", "--format", "json", "--out", out}, args...), deb, deb)...)
	if code != exitOK && code != exitInconclusive {
		t.Fatalf("self-compare with a second mode: exit %d; want %d or %d\n%s\n%s", code, exitOK, exitInconclusive, stdout, stderr)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Rows) != 1 {
		t.Fatalf("JSON report: %v, %d rows; want one\n%s", err, len(doc.Rows), stdout)
	}
	row := doc.Rows[0]
	// Which sides saw both modes: the spread of their boots' medians.
	values := map[string]map[string][]float64{} // side → boot → values
	for _, r := range readResultsFile(t, out) {
		side, boot := r.GetConfig("side"), r.GetConfig("boot")
		if values[side] == nil {
			values[side] = map[string][]float64{}
		}
		v, _ := r.Value("insn/op")
		values[side][boot] = append(values[side][boot], v)
	}
	both := map[string]bool{}
	for side, boots := range values {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, vs := range boots {
			slices.Sort(vs)
			m := vs[len(vs)/2]
			lo, hi = math.Min(lo, m), math.Max(hi, m)
		}
		both[side] = hi/lo-1 > guestfaults.BimodalShift/2
	}
	t.Logf("verdict %s by the %s rule; sides with both modes: A %v, B %v; notes %q", row.Verdict, row.Rule, both["A"], both["B"], row.Notes)
	if row.Verdict == compare.Different {
		t.Errorf("a kernel against itself with a second mode: DIFFERENT; want SAME or UNKNOWN")
	}
	switch {
	case (both["A"] || both["B"]) && row.Rule != compare.RuleStatistical:
		t.Errorf("a side's boots span both modes, but the row was decided by the %s rule; want the statistical fallback", row.Rule)
	case !both["A"] && !both["B"]:
		t.Logf("no side saw both modes this time (chance about 1/64): the fallback is not exercised")
	}
	assertNoQEMULeft(t)
}

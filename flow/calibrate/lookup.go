package calibrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
	"golang.org/x/perf/benchfmt"
)

// maxAge is how old a calibration may be before comparisons call it stale
// and use the defaults instead: a host's load and firmware change, and a
// month is about how long docs/verdicts.md's TCG measurements held here.
const maxAge = 30 * 24 * time.Hour

// DefaultBound is the documented jitter bound of the benchmarks that
// deterministicFamilies names, used under icount when this host has no
// fresh calibration. With 5 samples a boot it was 0.1 %: three times the
// largest difference 16 boots of Debian 6.12 showed on the LPM lookups
// (0.024 %), rounded up. With one sample a boot (wire.DefaultIcountSamples)
// a boot's value is one sample, not a median of five, and the calibration of
// Debian 6.12 put the random-key lookup's bound at 0.159 %: 0.2 % keeps
// that margin, still five times below the 1 % minimum effect.
const DefaultBound = 0.002

// deterministicFamilies are the benchmark families that boots of one image
// count to within a few hundredths of a percent under icount on every
// kernel calibrated here (Debian 6.1 and 6.12): the LPM trie lookups and
// the harness controls; the hash map lookups and full-map updates of the
// hash, LRU and per-CPU maps, their baseline, the bloom filter's four
// operations and task storage gets (4 boots of each kernel, 5 samples × 5
// rounds, 10000 entries, key size 4: boot medians apart by at most
// 0.007 %, the task storage gets 0.033 %). Other families (batch
// operations, LPM updates and inserts that may hit slab slow paths, ring
// buffers, task storage creates, which showed two modes on 6.1, and its
// baseline, 0.4 % apart on 6.12) keep the statistical rule until a
// calibration of this host shows otherwise; so does a user's --workload
// program, whatever it does.
var deterministicFamilies = []string{"LPMTrie/op=lookup", "LPMTrie/op=noop", "LPMTrie/op=baseline", "LPMTrieUnrolled/op=lookup",
	"HashMap/op=baseline", "HashMap/map=hash", "HashMap/map=lru_hash", "HashMap/map=percpu_hash", "BloomFilter", "TaskStorage/prog=raw_tp/op=get"}

// Remote is implemented by a remote executor (measure.Setup.Remote) whose
// boots run on a class of hosts rather than this one: a fleet's queue
// (fleet.Executor). Jitter bounds and floors hold per host class, so the
// calibrations of its boots are keyed by the class, not by this host, and
// kept on the class's shelf, where every client finds them.
type Remote interface {
	// CalibrationClass returns the host class as a key's host (its Name
	// names the class; CPU and CPUs may stay empty), with the QEMU
	// version and the CPU model the class's boots of the CPU profile cpu
	// run.
	CalibrationClass(ctx context.Context, cpu vmrunner.CPUProfile) (host Host, qemu, cpuModel string, err error)
	// CalibrationShelf is where the class's calibrations are kept.
	CalibrationShelf() Shelf
}

// remoteLookup bounds how long boundsFor waits for a remote shelf and class.
const remoteLookup = time.Minute

// ShelfFor returns where the calibrations of setup's boots are kept: its
// remote's shelf (Remote), else the cache directory.
func ShelfFor(setup *measure.Setup, cacheDir string) Shelf {
	if r, ok := setup.Remote.(Remote); ok {
		return r.CalibrationShelf()
	}
	return Dir(cacheDir)
}

// keyFor returns the key of the calibration that comparisons made with
// setup need, before any boot: the host (this one, or the host class of
// its remote, see Remote), the setup's accelerator (decided by the setup,
// never auto), the QEMU version and the CPU model that accelerator
// emulates with the setup's CPU profile (of this host's QEMU binary, or the
// class's), the
// plan's samples and rounds, and whether two kernels would run in pairs.
// It is the key Run's results give, so a comparison finds the calibration
// of its setup.
func keyFor(ctx context.Context, setup *measure.Setup) (Key, error) {
	accel := setup.Accel
	plan := setup.Plan.Wire()
	cpu := setup.VM.CPU
	k := Key{Accel: string(accel), CPUModel: cpu.QEMUModel(accel), Samples: plan.Samples, Rounds: plan.Rounds, Paired: setup.Pairs(2), BootArgs: bootArgs(accel, cpu)}
	if r, ok := setup.Remote.(Remote); ok {
		var err error
		if k.Host, k.QEMU, k.CPUModel, err = r.CalibrationClass(ctx, cpu); err != nil {
			return Key{}, fmt.Errorf("calibrate: %w", err)
		}
		return k, nil
	}
	host, err := thisHost()
	if err != nil {
		return Key{}, err
	}
	version, err := vmrunner.QEMUVersion(cmp.Or(setup.VM.QEMU, vmrunner.DefaultQEMU))
	if err != nil {
		return Key{}, fmt.Errorf("calibrate: %w", err)
	}
	k.Host, k.QEMU = host, version
	return k, nil
}

// bounds are what comparisons made with a setup take from calibration:
// the jitter bounds of deterministic benchmarks (icount only) and the
// calibrated floors of the minimum effect, by benchmark name, with where
// they came from in words.
type bounds struct {
	Jitter, Floors map[string]float64
	Source         string
}

// boundsFor finds the bounds of setup's comparisons on its shelf (ShelfFor:
// cacheDir, or its remote's, waiting for that at most a minute): the
// stored calibration of its key when fresh, else, under icount, the
// documented defaults for the plan's benchmarks (DefaultBound for
// deterministicFamilies), and no floors. Source says which, and why the
// calibration was not used.
func boundsFor(ctx context.Context, setup *measure.Setup, cacheDir string) (bounds, error) {
	ctx, cancel := context.WithTimeout(ctx, remoteLookup)
	defer cancel()
	b := bounds{Jitter: map[string]float64{}, Floors: map[string]float64{}}
	key, err := keyFor(ctx, setup)
	if err != nil {
		b.Source = fmt.Sprintf("no calibration: %v", err)
		return b, nil
	}
	hosts := "this host"
	if _, ok := setup.Remote.(Remote); ok {
		hosts = key.Host.Name
	}
	c, err := load(ctx, ShelfFor(setup, cacheDir), key, maxAge)
	switch {
	case err == nil:
		b = c.bounds(hosts)
		if wire.Accel(key.Accel).CountsInstructions() {
			b.defaults(setup.Plan.Names(), c.covers, true)
		}
		return b, nil
	case errors.Is(err, ErrStale) && c != nil:
		b.Source = fmt.Sprintf("the calibration of %s is stale (made %s, more than %d days ago: run lpmbisect calibrate again)",
			key.Host.Name, c.Date.Format(time.DateOnly), int(maxAge.Hours()/24))
	case errors.Is(err, ErrNoCalibration):
		b.Source = "no calibration of " + hosts + " for " + key.String() + " (lpmbisect calibrate makes one)"
	default:
		return b, err
	}
	if wire.Accel(key.Accel).CountsInstructions() {
		b.defaults(setup.Plan.Names(), func(string) bool { return false }, false)
	}
	return b, nil
}

// DefaultBounds are the jitter bounds of names under icount on a host with
// no calibration, as boundsFor gives them: DefaultBound for the benchmarks of
// deterministicFamilies, a user's program and the verifier's counts, none
// for the others (the statistical rule decides them). Results measured
// elsewhere and imported without their calibration (lpmbisect history
// import) are judged with them.
func DefaultBounds(names []string) map[string]float64 {
	b := bounds{Jitter: map[string]float64{}, Floors: map[string]float64{}}
	b.defaults(names, func(string) bool { return false }, false)
	return b.Jitter
}

// defaults gives the benchmarks names that calibrated does not cover the
// documented default bound, DefaultBound, under icount: those of
// deterministicFamilies, and a user's --workload program with its noop
// and its own-work row (wire.WorkloadOwn), which the deterministic rule
// decides while each side's boots agree within the bound and the
// statistical rule once they do not (a program with two modes shows them
// as boots that disagree), and the verifier's rows (wire.VerifierPrefix),
// whose counts repeat exactly from load to load; their verification time
// does not, falls to the statistical rule, and holds no boots
// (wire.IsVerifierTime). Source says so; partly: what a stored
// calibration left to the defaults.
func (b *bounds) defaults(names []string, calibrated func(name string) bool, partly bool) {
	var given []string
	for _, name := range names {
		if calibrated(name) {
			continue
		}
		if strings.HasPrefix(name, wire.VerifierPrefix) {
			b.Jitter[name] = DefaultBound
			given = append(given, name)
			continue
		}
		if prog, ok := wire.WorkloadOf(name); ok {
			b.Jitter[name] = DefaultBound
			if name == wire.WorkloadBench(prog) && !calibrated(wire.WorkloadOwn(prog)) {
				b.Jitter[wire.WorkloadOwn(prog)] = DefaultBound
			}
			given = append(given, name)
			continue
		}
		for _, f := range deterministicFamilies {
			if name == f || strings.HasPrefix(name, f+"/") {
				b.Jitter[name] = DefaultBound
				given = append(given, name)
			}
		}
	}
	if len(given) == 0 {
		return
	}
	families := slices.Clone(deterministicFamilies)
	if partly { // name what the calibration left to the defaults
		families = slices.DeleteFunc(slices.Clone(given), func(n string) bool {
			_, ok := wire.WorkloadOf(n)
			return ok || strings.HasPrefix(n, wire.VerifierPrefix)
		})
	}
	if slices.ContainsFunc(given, func(n string) bool { return strings.HasPrefix(n, wire.VerifierPrefix) }) {
		families = append(families, "the verifier's counts while their boots agree (its verification time moves from load to load and never holds the boots)")
	}
	for _, name := range given {
		if prog, ok := wire.WorkloadOf(name); ok && name == wire.WorkloadBench(prog) {
			families = append(families, "your program "+prog+" (with its noop and own work) while its boots agree")
		}
	}
	b.Source += fmt.Sprintf("; the documented defaults: ±%.2g%% jitter for %s", 100*DefaultBound, strings.Join(families, ", "))
}

// covers reports whether the calibration measured the benchmark name.
func (c *Calibration) covers(name string) bool {
	return slices.ContainsFunc(c.Benchmarks, func(r Benchmark) bool { return r.Name == name })
}

// bounds are the calibration's jitter bounds and floors. Source names
// it and the hosts it is of, and the benchmarks whose floor was not reached, which keep the
// default minimum effect.
func (c *Calibration) bounds(hosts string) bounds {
	b := bounds{Jitter: map[string]float64{}, Floors: map[string]float64{}}
	var unreached []string
	for _, row := range c.Benchmarks {
		bound, deterministic := c.Bound(row.Name, row.Unit)
		if deterministic {
			b.Jitter[row.Name] = bound
		}
		if floor, ok := c.Floor(row.Name, row.Unit); ok {
			b.Floors[row.Name] = floor
		} else if len(row.SameShare) > 0 && !deterministic { // the jitter bound decides those
			unreached = append(unreached, row.Name)
		}
	}
	b.Source = fmt.Sprintf("calibration of %s on %s for %s", c.Kernel, c.Date.Format(time.DateOnly), hosts)
	if !wire.Accel(c.Key.Accel).CountsInstructions() && len(b.Floors) > 0 && c.Method.MaxBoots == 0 {
		b.Source += "; its floors assume one look with all of α, smaller than an adaptive comparison can rule out (calibrate again)"
	}
	if len(unreached) > 0 && len(c.Method.Grid) > 0 {
		b.Source += fmt.Sprintf("; no floor up to ±%.3g%% for %s (their boots spread wider on this host): the default minimum effect applies, and SAME is likely out of reach",
			100*c.Method.Grid[len(c.Method.Grid)-1], strings.Join(unreached, ", "))
	}
	return b
}

// apply sets a comparison's calibrated statistics: the jitter bounds, and
// with auto, each benchmark's minimum effect as the larger of opts'
// (the user's floor) and its calibrated floor.
func (b bounds) apply(opts *compare.Options, auto bool) {
	if len(b.Jitter) > 0 {
		opts.Bounds = b.Jitter
	}
	if !auto {
		return
	}
	opts.MinEffects = map[string]float64{}
	for name, floor := range b.Floors {
		opts.MinEffects[name] = math.Max(floor, opts.MinEffect)
	}
}

// Use sets a comparison's calibrated statistics for setup and tells
// whether the deterministic rule decides every benchmark of its plan (so
// DeterministicBoots boots a side are enough). Under icount, or with auto
// (each benchmark's minimum effect at least its calibrated floor), it
// applies what boundsFor finds (apply); under wall time without auto it reads
// nothing. With statistical the significance test decides every row: no
// jitter bounds. It says on setup.Log where the statistics came from.
func Use(ctx context.Context, setup *measure.Setup, opts *compare.Options, auto, statistical bool) (deterministic bool) {
	if setup.Accel != wire.AccelIcount && !auto {
		return false
	}
	b, err := boundsFor(ctx, setup, setup.CacheDir)
	if err == nil {
		b, err = sideB(ctx, setup, b)
	}
	if err != nil {
		setup.Log.Printf("warning: calibration not read: %v", err)
		return false
	}
	setup.Log.Printf("statistics from %s", b.Source)
	return b.use(opts, setup.Plan.Names(), auto, statistical)
}

// sideB returns the bounds of a comparison whose side B boots another CPU
// profile than A (measure.Options.CPUProfileB): each side's jitter is its
// own model's, so a benchmark keeps a jitter bound, or a floor, only where
// both models have one, the wider of the two, and Source names both; a
// setup whose sides share one profile keeps a, A's.
func sideB(ctx context.Context, setup *measure.Setup, a bounds) (bounds, error) {
	cpuA, cpuB := setup.VM.CPU, setup.Variants(2)[1].CPU
	if cpuB.Name == cpuA.Name {
		return a, nil
	}
	other := *setup
	other.VM.CPU = cpuB
	b, err := boundsFor(ctx, &other, setup.CacheDir)
	if err != nil {
		return a, err
	}
	out := bounds{Jitter: wider(a.Jitter, b.Jitter), Floors: wider(a.Floors, b.Floors),
		Source: fmt.Sprintf("each side's CPU model, the wider per benchmark: A (CPU profile %s) %s; B (CPU profile %s) %s", cpuA.Label(), a.Source, cpuB.Label(), b.Source)}
	return out, nil
}

// wider is, for every name both maps have, the larger value.
func wider(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name, va := range a {
		if vb, ok := b[name]; ok {
			out[name] = math.Max(va, vb)
		}
	}
	return out
}

// use is Use with the bounds found, for the benchmarks names.
func (b bounds) use(opts *compare.Options, names []string, auto, statistical bool) bool {
	b.apply(opts, auto)
	if statistical {
		opts.Bounds = nil
		return false
	}
	for _, name := range names {
		if _, ok := opts.Bounds[name]; !ok {
			return false
		}
	}
	return true
}

// Labels record in a results file what decided its rows, so lpmbisect
// stat decides the same way (FromResults reads them back).
func Labels(opts compare.Options) map[string]string {
	l := map[string]string{}
	if len(opts.Bounds) > 0 {
		l[wire.KeyJitterBounds] = compare.FormatBounds(opts.Bounds)
	}
	if len(opts.MinEffects) > 0 {
		l[wire.KeyMinEffects] = compare.FormatBounds(opts.MinEffects)
	}
	return l
}

// FromResults sets opts' jitter bounds and minimum effects from what a
// results file recorded (Labels); results without them leave opts alone.
func FromResults(opts *compare.Options, results []*benchfmt.Result) error {
	if len(results) == 0 {
		return nil
	}
	for key, dst := range map[string]*map[string]float64{wire.KeyJitterBounds: &opts.Bounds, wire.KeyMinEffects: &opts.MinEffects} {
		if v := results[0].GetConfig(key); v != "" {
			m, err := compare.ParseBounds(v)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			*dst = m
		}
	}
	return nil
}

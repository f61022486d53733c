package measure

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Runner boots the sides of a run on demand and keeps what the completed
// boots delivered, in memory and, boot by boot, in a results file. It is
// the Source of an adaptive comparison (package compare): Measure(n) brings
// every side to n completed boots (n complete pairs when Paired), booting
// only what is missing, through its Executor, which decides how boots run:
// one after the other, several at once (icount only), in pairs, or as jobs
// on other hosts.
//
// Boots of the sides are interleaved in rounds whose order is drawn from
// Seed (A B, B A, …), so slow drift of the host hits both sides alike.
// Only boots whose stream ended with a valid trailer count; the samples of
// a boot that panicked or stalled stay in its run directory (results.out)
// but never count, since a partial boot is not a complete unit. A side
// whose first boot fails, or more than MaxFailed boots, stops the run;
// where boots run at once, a failure before any boot of the side ended
// well waits for the side's boots still running: one that ends well shows
// the kernel boots, and only when none does is the failure the kernel's.
// A guest can fail once for reasons not its kernel's: Debian 6.12 panicked
// in about one boot in 30 under load from QEMU 7.2's CMPXCHG16B emulation,
// now kept out by the CPU model (vmrunner's emulatedCPUOff), and an
// emulator is never known to have no other such fault.
type Runner struct {
	Sides []*Side
	// Seed drives the order of the sides within each round of boots.
	// Record it to reproduce a run's order.
	Seed      uint64
	GuestArgs []string // run plan for the guest (kernel parameters); each side adds its Variant's
	// VM is the template of every boot: QEMU, the accelerator (decided
	// once, before the run: the guest is told it, and every boot runs
	// under it), memory, CPUs, deadlines, limits; each side boots its
	// Variant's CPU profile.
	VM        vmrunner.Config
	RunDir    string // one subdirectory per boot
	MaxFailed int    // failed boots tolerated per side (default 2)
	Exec      Executor
	// Paired runs two sides in pairs (see Paired): Measure then counts
	// complete pairs. Exec must boot a pair together: a *Paired, or a
	// remote policy that puts a pair into one job.
	Paired bool
	// Sink, when set, receives every completed boot's results as the boot
	// ends, synced to disk boot by boot.
	Sink        *ResultsFile
	OnBootStart func(side *Side, boot, done, total int)
	OnBoot      func(BootReport) // called after every boot, never concurrently

	once     sync.Once
	mu       sync.Mutex
	order    *rand.Rand
	sum      *Summary
	failed   map[string]int
	started  map[string]int // boots started per side, failed included
	running  map[string]int // boots of a side an executor has started and not yet ended
	seenNote map[wire.Note]bool
	done     int // boots finished, all sides
	total    int // boots planned so far, all sides
	round    int // rounds (pairs) started
	pairOK   map[int]int
	results  []*benchfmt.Result
	boots    map[string][][]*benchfmt.Result
	// insight is RunOptions.Insight as the setup allows it (nil: none),
	// static the sides' static symbol sources it loaded before the boots.
	insight *Insight
	static  [2]*insight.Side
}

func (r *Runner) init() {
	r.once.Do(func() {
		if r.MaxFailed == 0 {
			r.MaxFailed = 2
		}
		r.order = rand.New(rand.NewPCG(r.Seed, 0x6c706d62)) // "lpmb"
		r.sum = &Summary{OK: map[string]int{}, PinnedCPU: -1}
		r.failed, r.started, r.running = map[string]int{}, map[string]int{}, map[string]int{}
		r.seenNote, r.pairOK = map[wire.Note]bool{}, map[int]int{}
		r.boots = map[string][][]*benchfmt.Result{}
	})
}

// Measure brings every side to at least n completed boots (n complete
// pairs when Paired). It returns early, with the finished boots kept, when
// the context is canceled or a side keeps failing. Errors wrap
// ErrBootFailed or ErrNoResults when a kernel is at fault.
func (r *Runner) Measure(ctx context.Context, n int) error {
	r.init()
	if r.Paired && len(r.Sides) != 2 {
		return fmt.Errorf("a paired run needs two kernels, not %d", len(r.Sides))
	}
	if r.Exec == nil {
		return fmt.Errorf("measure: a runner without an executor")
	}
	for {
		jobs := r.schedule(n)
		if len(jobs) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if err := r.Exec.Run(ctx, jobs, func(j Job, res *vmrunner.Result) error { return r.record(ctx, j, res) }); err != nil {
			return err
		}
	}
}

// schedule returns the next boots towards n: one pair in a paired run,
// otherwise every missing boot, in rounds of the sides in a drawn order.
func (r *Runner) schedule(n int) []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Paired {
		if r.sum.Pairs >= n {
			return nil
		}
		r.round++
		r.total = max(r.total, 2*n)
		var jobs []Job
		for _, s := range r.Sides {
			jobs = append(jobs, r.job(s, r.round))
		}
		return jobs
	}
	short := map[string]int{}
	for _, s := range r.Sides {
		short[s.Name] = n - r.sum.OK[s.Name]
	}
	r.total = max(r.total, r.done+sumPositive(short))
	var jobs []Job
	for {
		sides := slices.Clone(r.Sides)
		r.order.Shuffle(len(sides), func(i, j int) { sides[i], sides[j] = sides[j], sides[i] })
		added := false
		for _, s := range sides {
			if short[s.Name] > 0 {
				short[s.Name]--
				jobs = append(jobs, r.job(s, 0))
				added = true
			}
		}
		if !added {
			return jobs
		}
	}
}

func sumPositive(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += max(v, 0)
	}
	return t
}

// job numbers the next boot of side s, from 1, failed boots included.
func (r *Runner) job(s *Side, pair int) Job {
	r.started[s.Name]++
	boot := r.started[s.Name]
	cfg := r.VM
	cfg.Kernel, cfg.Initramfs = cmp.Or(s.BootImage, s.Kernel.Image), s.Image.Path
	cfg.Accel = cmp.Or(cfg.Accel, wire.AccelTCG) // vmrunner's default, told to the guest
	cfg.CPU = s.Variant.CPU
	cfg.KernelArgs = slices.Concat(r.GuestArgs, s.Variant.Append, []string{wire.ParamAccel.Arg(string(cfg.Accel))})
	// An armed insight pass runs in the first boot of each side, or in the
	// next one after QEMU died in the boot that loaded the memory plugin.
	if (boot == 1 || s.insightAgain) && !s.NoInsight {
		cfg.KernelArgs = wire.ArmInsight(cfg.KernelArgs)
		// Under icount only: the plugin counts what TCG runs.
		if !s.insightAgain && r.insight != nil && r.insight.MemoryPlugin != "" && cfg.Accel == wire.AccelIcount {
			cfg.MemoryPlugin, cfg.NoCycleModel = r.insight.MemoryPlugin, r.insight.NoCycleModel
			// the guest's memory pass, its exact profile, and its deferred work pass
			cfg.KernelArgs = wire.LoadPlugin(cfg.KernelArgs, !r.insight.NoCycleModel && !r.insight.NoDeferred)
		}
		s.insightAgain = false
	}
	if s.StaticSymbols { // on every boot of the side: one command line but for the pass's byte
		cfg.KernelArgs = wire.SkipKallsyms(cfg.KernelArgs)
	}
	cfg.RunDir = filepath.Join(r.RunDir, fmt.Sprintf("%s-%02d", s.Name, boot))
	j := Job{Side: s, Boot: boot, Pair: pair, Config: cfg}
	j.starting = func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.running[s.Name]++
		if r.OnBootStart != nil {
			r.OnBootStart(s, boot, r.done, r.total)
		}
	}
	return j
}

// record keeps the results of a finished boot, counts it, reports it, and
// returns an error when the run must stop: the context was canceled, the
// kernel produced no results, or it keeps failing (its first boot failed
// with none of its boots still running, or more than MaxFailed did).
func (r *Runner) record(ctx context.Context, j Job, res *vmrunner.Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, sum := j.Side, r.sum
	if r.running[s.Name] > 0 { // executors that do not say when a boot starts leave it at 0
		r.running[s.Name]--
	}
	rep := BootReport{Side: s, Boot: j.Boot, Result: res, Total: r.total}
	if res.Outcome == vmrunner.OK {
		labelled := labelResults(s, j.Boot, j.Pair, r.Seed, s.Params, res)
		if r.Sink != nil {
			for _, lr := range labelled {
				if err := r.Sink.Write(lr); err != nil {
					return fmt.Errorf("write results: %w", err)
				}
			}
			if err := r.Sink.Sync(); err != nil {
				return err
			}
		}
		rep.Written, rep.Results = len(labelled), labelled
		if s.Insight == nil {
			s.Insight, s.InsightProblem = res.Stream.Insight, res.Stream.InsightProblem
		}
		if s.Memory == nil && j.Config.MemoryPlugin != "" {
			s.Memory, s.MemoryProblem = res.Memory, res.MemoryProblem
		}
		r.results = append(r.results, labelled...)
		r.boots[s.Name] = append(r.boots[s.Name], labelled)
		sum.OK[s.Name]++
		if !slices.Contains(sum.Accels, string(res.Accel)) {
			sum.Accels = append(sum.Accels, string(res.Accel))
		}
		r.done++
		notes := res.Stream.Notes
		if n, ok := vcpuShortfall(j.Config.CPUs, res.Stream); ok {
			notes = append(slices.Clip(notes), n)
		}
		for _, w := range res.QEMUWarnings { // said once a run, as the guest's notes are
			notes = append(slices.Clip(notes), wire.Note{Key: "qemu", Text: w})
		}
		for _, n := range notes {
			if !r.seenNote[n] && n.Key != wire.KeyInfo {
				r.seenNote[n] = true
				sum.Notes = append(sum.Notes, n)
			}
		}
		if j.Pair > 0 {
			if r.pairOK[j.Pair]++; r.pairOK[j.Pair] == 2 {
				sum.Pairs++
			}
		}
		if len(labelled) == 0 {
			r.report(rep)
			return fmt.Errorf("kernel %s (%s): %w%s", s.Name, s.Label, ErrNoResults, whyNoResults(res.Stream.Notes))
		}
	} else if pluginFault(j, res) {
		// Not the kernel's failure: the boot is noted, not counted, and
		// the side's next boot runs the insight pass without the plugin.
		s.MemoryProblem = fmt.Sprintf("QEMU died in the boot that loaded the memory plugin (%s), so the memory pass is left out; the insight pass ran again without it", res.Detail)
		s.insightAgain = true
		sum.Failed = append(sum.Failed, rep)
		r.report(rep)
		return nil
	} else if res.Outcome != vmrunner.Canceled {
		r.failed[s.Name]++
		sum.Failed = append(sum.Failed, rep)
	}
	r.report(rep)
	if res.Outcome == vmrunner.Canceled {
		return context.Cause(ctx)
	}
	if res.Outcome != vmrunner.OK && (sum.OK[s.Name] == 0 && r.running[s.Name] == 0 || r.failed[s.Name] > r.MaxFailed) {
		kept := ""
		if n := len(res.Stream.Results); n > 0 {
			kept = fmt.Sprintf("; its %d finished samples are kept in %s but not counted", n, filepath.Join(j.Config.RunDir, "results.out"))
		}
		return fmt.Errorf("kernel %s (%s): %w: %s: %s (console log: %s%s)", s.Name, s.Label, ErrBootFailed, res.Outcome, res.Detail, res.ConsoleLog, kept)
	}
	return nil
}

// pluginFault says whether the boot of j died in QEMU itself (not in the
// guest: no panic, no stall) while it loaded the memory plugin, the first
// time for its side. QEMU's plugin core can abort such a boot: QEMU 7.2's
// does ("qemu_plugin_vcpu_mem_cb: code should not be reached") when a
// plugin flushes the code cache once blocks carry memory callbacks, which
// is why vmrunner's memplugin flushes only when it arms (memcount.c's
// DISARM). Whatever the cause, the side's
// kernel is not at fault there: the memory pass, which needs the plugin,
// is what is given up, not the run.
func pluginFault(j Job, res *vmrunner.Result) bool {
	return res.Outcome == vmrunner.QEMUError && j.Config.MemoryPlugin != "" && j.Side.MemoryProblem == ""
}

// noteWarning is the key of the notes the host adds to a run's Summary
// about what its guests reported (beside the guests' own notes).
const noteWarning = "warning"

// vcpuShortfall returns a warning when a guest saw fewer vCPUs (the count
// it reports as wire.KeyVCPUs) than its VM was given (asked; 0 means 1). A
// kernel built without CONFIG_SMP (tinyconfig's default) sees one whatever
// --cpus says: the benchmarks that need more vCPUs were then not selected,
// and the rows that ran did not run on the vCPUs asked for.
func vcpuShortfall(asked int, s *wire.Stream) (wire.Note, bool) {
	seen, err := strconv.Atoi(s.Config[wire.KeyVCPUs])
	if err != nil || seen < 1 || seen >= max(asked, 1) {
		return wire.Note{}, false
	}
	return wire.Note{Key: noteWarning, Text: fmt.Sprintf(
		"the guest saw %d vCPU(s) of the %d asked (is the kernel built with CONFIG_SMP?): benchmarks that need more vCPUs were not run",
		seen, asked)}, true
}

func (r *Runner) report(rep BootReport) {
	rep.Done = r.done
	if r.OnBoot != nil {
		r.OnBoot(rep)
	}
}

// Resume counts boots that completed in an earlier run of the same
// measurement (a night killed half way and run again) as completed boots of
// the side named side, so Measure boots only what is still missing. Their
// results are taken as they are; new boots are numbered after them. Call
// it before the first Measure.
func (r *Runner) Resume(side string, boots [][]*benchfmt.Result) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range boots {
		if len(b) == 0 {
			continue
		}
		r.boots[side] = append(r.boots[side], b)
		r.results = append(r.results, b...)
		r.sum.OK[side]++
		r.started[side]++
		r.done++
	}
}

// Results returns the results of every completed boot so far, of all
// sides, in the order the boots ended.
func (r *Runner) Results() []*benchfmt.Result {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.results)
}

// Boots returns the results of each completed boot of the side named side
// (A, B, …), in the order the boots ended.
func (r *Runner) Boots(side string) [][]*benchfmt.Result {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.boots[side])
}

// Summary says what the runner did so far.
func (r *Runner) Summary() *Summary {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	sum := *r.sum
	sum.OK = maps.Clone(sum.OK)
	if p, ok := r.Exec.(*Paired); ok {
		sum.Steps, sum.PinnedCPU = p.Steps(), p.PinnedCPU()
	}
	return &sum
}

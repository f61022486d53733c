package workloads

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
)

// Requirements shared by the BPF benchmarks.
var (
	// ReqLPMTrie: BPF_MAP_TYPE_LPM_TRIE, Linux 4.11.
	ReqLPMTrie = Requirement{
		Feature:   "BPF_MAP_TYPE_LPM_TRIE",
		MinKernel: "4.11",
		Probe:     bpfProbe(func() error { return features.HaveMapType(ebpf.LPMTrie) }),
	}
	// ReqXDPTestRun: XDP programs (BPF_PROG_TEST_RUN for XDP is 4.12).
	ReqXDPTestRun = Requirement{
		Feature:   "XDP programs with BPF_PROG_TEST_RUN",
		MinKernel: "4.12",
		Probe:     bpfProbe(func() error { return features.HaveProgramType(ebpf.XDP) }),
	}
	// ReqBPFLoop: the bpf_loop helper from an XDP program, Linux 5.17.
	// It implies BPF_PROG_TEST_RUN for XDP (4.12).
	ReqBPFLoop = Requirement{
		Feature:   "bpf_loop",
		MinKernel: "5.17",
		Hint:      "LPMTrieUnrolled measures lookups and updates without it",
		Probe:     bpfProbe(func() error { return features.HaveProgramHelper(ebpf.XDP, asm.FnLoop) }),
	}
	// ReqFentry: fentry/fexit tracing programs (BPF trampolines), 5.5.
	ReqFentry = Requirement{
		Feature:   "fentry/fexit programs",
		MinKernel: "5.5",
		Probe:     bpfProbe(func() error { return features.HaveProgramType(ebpf.Tracing) }),
	}
	// ReqKernelBTF: the kernel's own BTF (CONFIG_DEBUG_INFO_BTF), 5.5
	// for fentry targets.
	ReqKernelBTF = Requirement{
		Feature:   "kernel BTF (CONFIG_DEBUG_INFO_BTF)",
		MinKernel: "5.5",
		Probe: func() error {
			_, err := btf.LoadKernelSpec()
			if errors.Is(err, unix.ENOENT) || errors.Is(err, btf.ErrNotSupported) {
				return fmt.Errorf("%w: %w", ebpf.ErrNotSupported, err)
			}
			return err
		},
	}
)

// RemoveMemlock lifts RLIMIT_MEMLOCK, which limits BPF memory before Linux
// 5.11 (later kernels charge the memory cgroup instead). It needs
// CAP_SYS_RESOURCE to raise the hard limit.
//
// This is what cilium/ebpf's rlimit.RemoveMemlock does on old kernels, but
// that package must not be linked into the guest: its init function creates
// a BPF map, which looks for BPF tokens in /proc/self/mountinfo and caches
// the failure for the life of the process. PID 1 runs package init before it
// has mounted /proc, so every later map creation would fail.
var RemoveMemlock = sync.OnceValue(func() error {
	inf := &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, inf); err != nil {
		return fmt.Errorf("remove memlock rlimit: %w", err)
	}
	return nil
})

// bpfProbe wraps a feature probe so that the memlock rlimit is lifted first.
// Failing to lift it is not fatal: 5.11 and later do not need it, and on
// older kernels the probe itself then fails with a hint.
func bpfProbe(probe func() error) func() error {
	return func() error {
		RemoveMemlock()
		return probe()
	}
}

// lpmDoc is the part of every LPM trie benchmark's doc that says what is
// in the trie.
const lpmDoc = "LPM trie of the dense keys [0,entries) at /prefix_len; in-kernel ktime around one bpf_loop of 10000 iterations per XDP test run"

func lpmTrieBenchmarks() []*Benchmark {
	bench := func(op bpf.LPMOp, keys bpf.KeyOrder, doc string) *Benchmark {
		b := &Benchmark{
			Name:     "LPMTrie/op=" + op.String() + "/keys=" + keys.String(),
			Doc:      doc,
			Params:   []string{"entries", "prefix_len"},
			Requires: []Requirement{ReqBPFLoop},
			Run:      lpmRun(op, keys, bpf.BigEndianKeys),
			Instance: lpmInstance(op, keys, bpf.BigEndianKeys),
			Spec:     lpmSpec(op, keys, bpf.BigEndianKeys),
			Programs: []string{bpf.LPMBench{Op: op}.ProgName()},
		}
		if op.UsesTrie() {
			b.Requires = []Requirement{ReqLPMTrie, ReqBPFLoop}
		}
		return b
	}
	randomDoc := map[bpf.KeyOrder]string{
		bpf.RandomKeys:     "keys bpf_get_prandom_u32() % entries",
		bpf.SequentialKeys: "keys walked in order across runs",
	}
	var out []*Benchmark
	noop := bench(bpf.OpNoop, bpf.RandomKeys, "empty bpf_loop callback: the harness overhead per iteration (the kernel bench's lpm-trie-noop); no trie")
	noop.Name, noop.Params = "LPMTrie/op=noop", nil
	out = append(out, noop)
	for _, keys := range []bpf.KeyOrder{bpf.RandomKeys, bpf.SequentialKeys} {
		out = append(out, bench(bpf.OpBaseline, keys, "key generation only, "+randomDoc[keys]+": subtract it from lookup/update (lpm-trie-baseline); no trie"))
	}
	for _, keys := range []bpf.KeyOrder{bpf.RandomKeys, bpf.SequentialKeys} {
		out = append(out, bench(bpf.OpLookup, keys, "bpf_map_lookup_elem on a full trie, "+randomDoc[keys]+"; a miss fails the run (lpm-trie-lookup). "+lpmDoc))
	}
	for _, keys := range []bpf.KeyOrder{bpf.RandomKeys, bpf.SequentialKeys} {
		out = append(out, bench(bpf.OpUpdate, keys, "bpf_map_update_elem(BPF_EXIST) of existing keys in a full trie, "+randomDoc[keys]+"; an error fails the run (lpm-trie-update). "+lpmDoc))
	}
	out = append(out,
		bench(bpf.OpInsert, bpf.SequentialKeys, "bpf_map_update_elem(BPF_NOEXIST) into an empty trie, keys in order; emptying the trie when full is not timed (lpm-trie-insert). "+lpmDoc),
		bench(bpf.OpDelete, bpf.SequentialKeys, "bpf_map_delete_elem from a full trie, keys in order; refilling the trie when empty is not timed (lpm-trie-delete). "+lpmDoc),
		&Benchmark{
			Name:     "LPMTrie/op=free",
			Doc:      "time to free a full trie of entries keys: fentry/fexit on bpf_map_free_deferred after the last reference is closed (lpm-trie-free); 4 frees per sample",
			Params:   []string{"entries", "prefix_len"},
			Requires: []Requirement{ReqLPMTrie, ReqFentry, ReqKernelBTF},
			Run:      lpmFree,
			Spec:     freeSpec,
			Programs: []string{bpf.FreeEntryProgName, bpf.FreeExitProgName},
		},
	)
	return out
}

// loadCollection loads spec, logging the verifier's complaint if any, and
// places it where the clock needs it (see placeFor).
func loadCollection(r *Run, what string, spec *ebpf.CollectionSpec) (*ebpf.Collection, error) {
	load := func() (*ebpf.Collection, error) {
		coll, err := ebpf.NewCollection(spec)
		if err != nil {
			var verr *ebpf.VerifierError
			if errors.As(err, &verr) {
				r.Logf("verifier log:\n%+v", verr)
			}
			return nil, fmt.Errorf("load %s: %w", what, err)
		}
		return coll, nil
	}
	coll, note, err := placeFor(r.Params.Clock, load, os.Getpagesize())
	if note != "" {
		r.Info(note)
	}
	return coll, err
}

// placeFor loads a collection with load. Under a wall clock it places the
// JIT code of each program on one page (placeOnOnePage); under an
// instruction clock it loads once, since where the code lies changes the
// emulator's speed but not the guest's instruction count: measured under
// icount on Debian 6.1 and 6.12, noop, both baselines and both lookups gave
// the same boot medians, to the last digit written, with every program
// split over two pages as with every program on one (2 boots each).
// Skipping the retries saves their loads' wall time, not instructions.
func placeFor(c Clock, load func() (*ebpf.Collection, error), pageSize int) (*ebpf.Collection, string, error) {
	if c == InstructionClock {
		coll, err := load()
		return coll, "", err
	}
	return placeOnOnePage(load, pageSize)
}

// maxPlacements bounds the loads placeOnOnePage tries.
const maxPlacements = 64

// placeOnOnePage loads a collection until the JIT code of each of its
// programs (the main function and its subprograms, e.g. a bpf_loop
// callback) lies within one page, keeping the misplaced loads until then so
// that the allocator moves on, and closing them after.
//
// Why: each function of a program is JITed into its own allocation, at an
// offset the kernel randomizes, so from boot to boot a program and its
// callback land on one page or on two. Under TCG a call across pages costs
// much more (translated code is chained only within a page): measured on
// Debian 6.12, noop 7.8 → 10.0 ns/op and the sequential baseline 14.1 →
// 16.4 ns/op when split, in the same boot. That is a property of the
// emulator and the allocator's dice, not of the map code, and it made the
// boots of one kernel fall into two groups 15–30 % apart. Real CPUs pay
// less for the split (an extra iTLB entry), but it is noise there too.
//
// The note says how many loads it took; it is empty when the first load
// was placed. When the kernel does not report JIT addresses (no JIT, or
// addresses hidden), the first load is used and the note says so.
func placeOnOnePage(load func() (*ebpf.Collection, error), pageSize int) (*ebpf.Collection, string, error) {
	var misplaced []*ebpf.Collection
	defer func() {
		for _, c := range misplaced {
			c.Close()
		}
	}()
	for attempt := 1; ; attempt++ {
		coll, err := load()
		if err != nil {
			return nil, "", err
		}
		onePage, known := jitOnOnePage(coll, uint64(pageSize))
		switch {
		case !known:
			return coll, "JIT addresses not reported: program placement not controlled", nil
		case onePage && attempt == 1:
			return coll, "", nil
		case onePage:
			return coll, fmt.Sprintf("JIT code placed on one page after %d loads", attempt), nil
		case attempt == maxPlacements:
			return coll, fmt.Sprintf("JIT code still split over pages after %d loads: timings may carry a placement penalty", attempt), nil
		}
		misplaced = append(misplaced, coll)
	}
}

// jitOnOnePage reports whether every program of coll has all its JITed
// functions within one page, and whether the kernel told where they are.
func jitOnOnePage(coll *ebpf.Collection, pageSize uint64) (onePage, known bool) {
	for _, prog := range coll.Programs {
		info, err := prog.Info()
		if err != nil {
			return false, false
		}
		addrs, ok1 := info.JitedKsymAddrs()
		lens, ok2 := info.JitedFuncLens()
		if !ok1 || !ok2 || len(addrs) == 0 || len(addrs) != len(lens) {
			return false, false
		}
		page := uint64(addrs[0]) / pageSize
		for i, a := range addrs {
			if a == 0 {
				return false, false // addresses hidden (kptr_restrict)
			}
			first, last := uint64(a)/pageSize, (uint64(a)+uint64(max(lens[i], 1))-1)/pageSize
			if first != page || last != page {
				return false, true
			}
		}
	}
	return true, true
}

// lpmRun returns the run function of an LPM trie benchmark timed around
// bpf_loop: load the program and maps, fill the trie if the operation needs
// it full, warm up (Params.WarmUpRounds), then report Params.Samples
// samples of Params.Rounds program runs each.
func lpmRun(op bpf.LPMOp, keys bpf.KeyOrder, layout bpf.KeyLayout) func(*Run) error {
	return runPrepared(func(r *Run) (*progBench, func(), error) { return lpmPrepare(r, op, keys, layout) })
}

// sampler takes one sample of a given number of program runs.
type sampler interface {
	sample(runs int) (Sample, error)
}

// runPrepared returns the run function of a benchmark that prepare loads
// and sets up: one sample's worth of runs to warm up, then Params.Samples
// samples of Params.Rounds runs each.
func runPrepared[S sampler](prepare func(*Run) (S, func(), error)) func(*Run) error {
	return func(r *Run) error {
		b, closeAll, err := prepare(r)
		if err != nil {
			return err
		}
		defer closeAll()
		if _, err := b.sample(r.Params.WarmUpRounds()); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		return reportSamples(r, func() (Sample, error) { return b.sample(r.Params.Rounds) })
	}
}

// lpmPrepare loads an LPM trie benchmark's program and maps and fills the
// trie if the operation needs it full: what its samples and the insight
// pass (lpmInstance) start from. closeAll releases the collection.
func lpmPrepare(r *Run, op bpf.LPMOp, keys bpf.KeyOrder, layout bpf.KeyLayout) (b *progBench, closeAll func(), err error) {
	p := r.Params
	spec, err := lpmSpec(op, keys, layout)(p)
	if err != nil {
		return nil, nil, err
	}
	coll, err := loadCollection(r, "LPM "+op.String()+" program", spec)
	if err != nil {
		return nil, nil, err
	}
	b = &progBench{prog: coll.Programs[bpf.LPMBench{Op: op, Layout: layout}.ProgName()], stats: coll.Maps[bpf.StatsMapName]}
	if op.UsesTrie() {
		b.trie = &trie{m: coll.Maps[bpf.TrieMapName], entries: p.Entries, prefixLen: p.PrefixLen, layout: layout}
		if op.StartsFull() {
			start := time.Now()
			how, err := b.trie.fill()
			if err != nil {
				coll.Close()
				return nil, nil, err
			}
			r.Info(fmt.Sprintf("filled %d entries with %s in %v", p.Entries, how, time.Since(start).Round(time.Millisecond)))
		}
	}
	switch op {
	case bpf.OpInsert:
		b.resetTrie = func() error { return p.untimed(b.trie.empty) }
	case bpf.OpDelete:
		b.resetTrie = func() error { return p.untimed(func() error { _, err := b.trie.fill(); return err }) }
	}
	return b, coll.Close, nil
}

// lpmSpec builds the collection of an LPM trie benchmark under p.
func lpmSpec(op bpf.LPMOp, keys bpf.KeyOrder, layout bpf.KeyLayout) func(Params) (*ebpf.CollectionSpec, error) {
	return func(p Params) (*ebpf.CollectionSpec, error) {
		prefixLen := p.PrefixLen
		if layout == bpf.HostOrderKeys {
			prefixLen = bpf.PrefixLen // the kernel bench's keys are whole u32s
		}
		return bpf.LPMBench{Op: op, Keys: keys, Entries: p.Entries, PrefixLen: prefixLen, Marks: p.windowMarks(), Layout: layout}.Spec()
	}
}

// reportSamples takes Params.Samples samples and reports them.
func reportSamples(r *Run, take func() (Sample, error)) error {
	for i := 1; i <= r.Params.Samples; i++ {
		s, err := take()
		if err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		if err := r.Sample(s); err != nil {
			return err
		}
	}
	return nil
}

// trie is an LPM trie of the dense keys [0, entries) that the benchmark
// fills and empties outside the timed region.
type trie struct {
	m                  *ebpf.Map
	entries, prefixLen uint32
	layout             bpf.KeyLayout
}

func (t *trie) fill() (string, error) { return fillTrie(t.m, t.entries, t.prefixLen, t.layout) }

// empty deletes every key, with one BPF_MAP_DELETE_BATCH where the kernel
// supports it for LPM tries (5.13), else one delete per key.
func (t *trie) empty() error {
	keys := trieKeys(t.entries, t.prefixLen, t.layout)
	if n, err := t.m.BatchDelete(keys, nil); err == nil && n == len(keys) {
		return nil
	}
	for i := range keys {
		if err := t.m.Delete(keys[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("empty LPM trie: delete key %d: %w", i, err)
		}
	}
	return nil
}

func trieKeys(n, prefixLen uint32, layout bpf.KeyLayout) []bpf.LPMKey {
	if layout == bpf.HostOrderKeys {
		prefixLen = bpf.PrefixLen
	}
	keys := make([]bpf.LPMKey, n)
	for i := range n {
		keys[i] = layout.Key(prefixLen, i)
	}
	return keys
}

// fillTrie inserts the keys layout.Key(prefixLen, i) with value i for i
// in [0, n) into an LPM trie. It uses one BPF_MAP_UPDATE_BATCH call where
// the kernel supports it for LPM tries (Linux 5.13) and falls back to one
// update per element. It returns how it filled the trie.
func fillTrie(m *ebpf.Map, n, prefixLen uint32, layout bpf.KeyLayout) (string, error) {
	keys := trieKeys(n, prefixLen, layout)
	values := make([]uint32, n)
	for i := range n {
		values[i] = i
	}
	count, berr := m.BatchUpdate(keys, values, nil)
	if berr == nil && count == int(n) {
		return "batch update", nil
	}
	for i := range keys {
		if err := m.Update(keys[i], values[i], ebpf.UpdateAny); err != nil {
			return "", fmt.Errorf("fill LPM trie: update key %d: %w (batch update: %w)", i, err, berr)
		}
	}
	if berr == nil {
		berr = fmt.Errorf("inserted %d of %d", count, n)
	}
	return fmt.Sprintf("per-element updates (batch update: %v)", berr), nil
}

// progBench runs an XDP program that accumulates bpf.Stats in a stats map.
type progBench struct {
	prog  *ebpf.Program
	stats *ebpf.Map
	trie  *trie // nil if the program has none
	// resetTrie is set when the program uses up keys (insert, delete):
	// it asks for a reset with bpf.RetNeedsReset, and runs go one at a
	// time. It empties (insert) or refills (delete) the trie.
	resetTrie func() error
}

// sample zeroes the accumulators (keeping the sequential cursor), runs the
// program rounds times with BPF_PROG_TEST_RUN and returns what it counted.
func (b *progBench) sample(rounds int) (Sample, error) {
	var st bpf.Stats
	if err := b.stats.Lookup(uint32(0), &st); err != nil {
		return Sample{}, fmt.Errorf("read stats: %w", err)
	}
	if err := b.setStats(bpf.Stats{Cursor: st.Cursor}); err != nil {
		return Sample{}, err
	}
	if b.resetTrie != nil {
		for done := 0; done < rounds; {
			ret, err := b.run(1)
			switch {
			case err != nil:
				return Sample{}, err
			case ret == bpf.RetNeedsReset:
				if err := b.rewind(); err != nil {
					return Sample{}, err
				}
			default:
				done++
			}
		}
	} else if _, err := b.run(rounds); err != nil {
		return Sample{}, err
	}
	if err := b.stats.Lookup(uint32(0), &st); err != nil {
		return Sample{}, fmt.Errorf("read stats: %w", err)
	}
	if err := st.Check(); err != nil {
		return Sample{}, err
	}
	return Sample{Ops: st.Iterations, Elapsed: st.Nanoseconds}, nil
}

func (b *progBench) setStats(st bpf.Stats) error {
	if err := b.stats.Update(uint32(0), st, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("reset stats: %w", err)
	}
	return nil
}

// run runs the program repeat times and returns its last return value.
func (b *progBench) run(repeat int) (uint32, error) {
	// XDP test runs need at least an Ethernet header (14 bytes).
	ret, err := b.prog.Run(&ebpf.RunOptions{Data: make([]byte, 14), Repeat: uint32(repeat)})
	if err != nil {
		return 0, fmt.Errorf("run program: %w", err)
	}
	if ret != bpf.RetDone && !(b.resetTrie != nil && ret == bpf.RetNeedsReset) {
		return 0, fmt.Errorf("program returned %d, want %d", ret, bpf.RetDone)
	}
	return ret, nil
}

// rewind resets the trie (untimed) and the cursor, keeping the
// accumulators.
func (b *progBench) rewind() error {
	var st bpf.Stats
	if err := b.stats.Lookup(uint32(0), &st); err != nil {
		return fmt.Errorf("read stats: %w", err)
	}
	if st.Cursor != uint64(b.trie.entries) {
		return fmt.Errorf("program asked for a reset after %d of %d keys", st.Cursor, b.trie.entries)
	}
	if err := b.resetTrie(); err != nil {
		return err
	}
	st.Cursor = 0
	return b.setStats(st)
}

// freesPerSample is the number of trie frees timed per free sample.
const freesPerSample = 4

// freeSpec builds the collection of LPMTrie/op=free for the running
// kernel, whose BTF gives the offsets its programs read.
func freeSpec(Params) (*ebpf.CollectionSpec, error) {
	kspec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("load kernel BTF: %w", err)
	}
	off, err := bpf.MapOffsetsFromBTF(kspec)
	if err != nil {
		return nil, err
	}
	return bpf.TrieFreeSpec(off)
}

// untraceable says a load or attach error of a tracing program whose
// target the kernel cannot trace (ESRCH, ENOENT) is ErrNotSupported.
func untraceable(err error, target string) error {
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%w: %s is not traceable on this kernel: %w", ebpf.ErrNotSupported, target, err)
	}
	return err
}

// lpmFree times the freeing of a full trie: each free creates a trie named
// bpf.FreeTrieName, fills it, closes it and waits for the fexit program to
// count the free.
func lpmFree(r *Run) error {
	p := r.Params
	spec, err := freeSpec(p)
	if err != nil {
		return err
	}
	coll, err := loadCollection(r, "trie free programs", spec)
	if err != nil {
		return untraceable(err, bpf.FreeTarget)
	}
	defer coll.Close()
	for _, name := range []string{bpf.FreeEntryProgName, bpf.FreeExitProgName} {
		l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[name]})
		if err != nil {
			return fmt.Errorf("attach %s to %s: %w", name, bpf.FreeTarget, err)
		}
		defer l.Close()
	}
	stats := coll.Maps[bpf.StatsMapName]
	freeOne := func() error {
		var before bpf.Stats
		if err := stats.Lookup(uint32(0), &before); err != nil {
			return fmt.Errorf("read stats: %w", err)
		}
		ts := bpf.TrieSpec(p.Entries)
		ts.Name = bpf.FreeTrieName
		m, err := ebpf.NewMap(ts)
		if err != nil {
			return fmt.Errorf("create trie to free: %w", err)
		}
		if _, err := fillTrie(m, p.Entries, p.PrefixLen, bpf.BigEndianKeys); err != nil {
			m.Close()
			return err
		}
		m.Close()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			var st bpf.Stats
			if err := stats.Lookup(uint32(0), &st); err != nil {
				return fmt.Errorf("read stats: %w", err)
			}
			if st.Runs > before.Runs {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the trie was not freed within 30 s of closing it (or %s did not fire)", bpf.FreeTarget)
			}
		}
	}
	if err := freeOne(); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return reportSamples(r, func() (Sample, error) {
		if err := stats.Update(uint32(0), bpf.Stats{}, ebpf.UpdateAny); err != nil {
			return Sample{}, fmt.Errorf("reset stats: %w", err)
		}
		for range freesPerSample {
			if err := freeOne(); err != nil {
				return Sample{}, err
			}
		}
		var st bpf.Stats
		if err := stats.Lookup(uint32(0), &st); err != nil {
			return Sample{}, fmt.Errorf("read stats: %w", err)
		}
		return Sample{Ops: st.Iterations, Elapsed: st.Nanoseconds}, st.Check()
	})
}

package workloads

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
)

// ReqKprobe: kprobe programs attachable through perf events, Linux 4.1
// (kprobe PMU 4.17, else tracefs).
var ReqKprobe = Requirement{
	Feature:   "kprobe programs",
	MinKernel: "4.1",
	Probe:     bpfProbe(func() error { return features.HaveProgramType(ebpf.Kprobe) }),
}

// The grid of the first LPM trie measurements (2017): lookups per gettid()
// and trie sizes.
var (
	syscallLookups = []int{1, 8, 32}
	syscallEntries = []uint32{0, 1, 8192}
)

// syscallsPerRound is the number of gettid() calls per round of a sample.
const syscallsPerRound = 500

// syscallChunks is the number of alternations between a program and its
// 0-lookup twin per sample.
const syscallChunks = 5

func syscallBenchmarks() []*Benchmark {
	doc := "gettid() with a kprobe program doing %d bpf_map_lookup_elem of one fixed key per call on a trie of %d entries: ns/op is per syscall (user-space clock, %d calls per round); %s"
	out := []*Benchmark{{
		Name:     "LPMTrieSyscall/lookups=0/entries=0",
		Doc:      fmt.Sprintf(doc, 0, 0, syscallsPerRound, "the base cost of the syscall with the kprobe"),
		Requires: []Requirement{ReqLPMTrie, ReqKprobe},
		Run:      syscallRun(0, 0),
		Instance: syscallInstance(0, 0),
		Spec:     syscallSpec(0, 0),
		Programs: []string{bpf.SyscallProgName},
	}}
	for _, entries := range syscallEntries {
		for _, lookups := range syscallLookups {
			out = append(out, &Benchmark{
				Name:     fmt.Sprintf("LPMTrieSyscall/lookups=%d/entries=%d", lookups, entries),
				Doc:      fmt.Sprintf(doc, lookups, entries, syscallsPerRound, "ns/lookup is (per syscall - per syscall with 0 lookups, measured alongside) / lookups"),
				Requires: []Requirement{ReqLPMTrie, ReqKprobe},
				Run:      syscallRun(lookups, entries),
				Instance: syscallInstance(lookups, entries),
				Spec:     syscallSpec(lookups, entries),
				Programs: []string{bpf.SyscallProgName},
			})
		}
	}
	return out
}

// gettidSymbols are the kernel symbols of gettid(), newest first: the x86-64
// syscall wrapper (4.17+) and the plain name.
var gettidSymbols = []string{"__x64_sys_gettid", "sys_gettid"}

// attachGettid attaches prog as a kprobe on gettid().
func attachGettid(prog *ebpf.Program) (link.Link, error) {
	var errs []error
	for _, sym := range gettidSymbols {
		l, err := link.Kprobe(sym, prog, nil)
		if err == nil {
			return l, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", sym, err))
	}
	return nil, fmt.Errorf("attach kprobe to gettid: %w (is CONFIG_KPROBES set and tracefs or the kprobe PMU available?)", errors.Join(errs...))
}

// syscallProg is a loaded kprobe program with its trie filled.
type syscallProg struct {
	coll *ebpf.Collection
	prog *ebpf.Program
}

// syscallSpec builds the collection of an LPMTrieSyscall benchmark: the
// kprobe program looking up the trie's last key (the only one of an empty
// trie, key 0).
func syscallSpec(lookups int, entries uint32) func(Params) (*ebpf.CollectionSpec, error) {
	return func(Params) (*ebpf.CollectionSpec, error) {
		key := bpf.KeyFor(bpf.PrefixLen, 0)
		if entries > 0 {
			key = bpf.KeyFor(bpf.PrefixLen, entries-1)
		}
		return bpf.SyscallLookupsSpec(lookups, entries, key)
	}
}

func loadSyscallProg(r *Run, lookups int, entries uint32) (*syscallProg, error) {
	spec, err := syscallSpec(lookups, entries)(r.Params)
	if err != nil {
		return nil, err
	}
	coll, err := loadCollection(r, fmt.Sprintf("kprobe program with %d lookups", lookups), spec)
	if err != nil {
		return nil, err
	}
	if entries > 0 {
		if _, err := fillTrie(coll.Maps[bpf.TrieMapName], entries, bpf.PrefixLen, bpf.BigEndianKeys); err != nil {
			coll.Close()
			return nil, err
		}
	}
	return &syscallProg{coll: coll, prog: coll.Programs[bpf.SyscallProgName]}, nil
}

// time attaches the program, calls gettid() n times and returns the
// elapsed guest time; it checks that the program fired for every call.
func (s *syscallProg) time(n int) (time.Duration, error) {
	l, err := attachGettid(s.prog)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	var before, after bpf.Stats
	stats := s.coll.Maps[bpf.StatsMapName]
	if err := stats.Lookup(uint32(0), &before); err != nil {
		return 0, fmt.Errorf("read stats: %w", err)
	}
	runtime.LockOSThread()
	start := time.Now()
	for range n {
		unix.Gettid()
	}
	elapsed := time.Since(start)
	runtime.UnlockOSThread()
	if err := stats.Lookup(uint32(0), &after); err != nil {
		return 0, fmt.Errorf("read stats: %w", err)
	}
	if fired := after.Runs - before.Runs; fired < uint64(n) {
		return 0, fmt.Errorf("the kprobe fired %d times for %d gettid() calls", fired, n)
	}
	return elapsed, nil
}

func syscallRun(lookups int, entries uint32) func(*Run) error {
	return func(r *Run) error {
		n := r.Params.Rounds * syscallsPerRound
		prog, err := loadSyscallProg(r, lookups, entries)
		if err != nil {
			return err
		}
		defer prog.coll.Close()
		var base *syscallProg
		if lookups > 0 {
			if base, err = loadSyscallProg(r, 0, entries); err != nil {
				return err
			}
			defer base.coll.Close()
		}
		if _, err := prog.time(n / 10); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		return reportSamples(r, func() (Sample, error) {
			// Alternate the program and its 0-lookup twin in chunks, so
			// that drift of the host hits both alike.
			var d, d0 time.Duration
			for range syscallChunks {
				dk, err := prog.time(n / syscallChunks)
				if err != nil {
					return Sample{}, err
				}
				d += dk
				if base != nil {
					db, err := base.time(n / syscallChunks)
					if err != nil {
						return Sample{}, err
					}
					d0 += db
				}
			}
			calls := n / syscallChunks * syscallChunks
			s := Sample{Ops: uint64(calls), Elapsed: uint64(d.Nanoseconds())}
			if base != nil {
				perLookup := float64(d-d0) / float64(calls) / float64(lookups)
				s.Extra = append(s.Extra, Metric{Value: perLookup, Unit: r.Params.Clock.Per("lookup")})
			}
			return s, nil
		})
	}
}

// syscallInstance loads an LPMTrieSyscall benchmark's program as
// syscallRun does, for the insight pass; Operate calls gettid() one
// sample's worth of times (Params.Rounds × syscallsPerRound) and counts
// the lookups the program made, the ops of its counts (Unit "lookup").
// The lookups run inside a kprobe program: PathKprobeProgram.
func syscallInstance(lookups int, entries uint32) func(Params, func(string, ...any)) (*Instance, error) {
	return func(p Params, logf func(string, ...any)) (*Instance, error) {
		r := &Run{Params: p, Logf: logf, Info: func(string) {}}
		prog, err := loadSyscallProg(r, lookups, entries)
		if err != nil {
			return nil, err
		}
		in := &Instance{Programs: map[string]*ebpf.Program{bpf.SyscallProgName: prog.prog}, Path: PathKprobeProgram, Unit: "lookup",
			Close: func() { prog.coll.Close() }}
		if lookups > 0 {
			in.Operate = func() (uint64, error) {
				n := p.Rounds * syscallsPerRound
				if _, err := prog.time(n); err != nil {
					return 0, err
				}
				return uint64(n * lookups), nil
			}
		}
		return in, nil
	}
}

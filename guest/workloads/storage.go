package workloads

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
)

// Requirements of the task storage benchmarks.
var (
	// ReqTaskStorage: BPF_MAP_TYPE_TASK_STORAGE, Linux 5.11.
	ReqTaskStorage = Requirement{
		Feature:   "BPF_MAP_TYPE_TASK_STORAGE",
		MinKernel: "5.11",
		Probe:     bpfProbe(func() error { return features.HaveMapType(ebpf.TaskStorage) }),
	}
	// ReqTaskStorageHelper: bpf_task_storage_get from tracing programs,
	// Linux 5.11. Raw tracepoint and fentry programs get it from the same
	// table of tracing helpers; cilium/ebpf probes helpers of raw
	// tracepoint programs only, so that is what is probed.
	ReqTaskStorageHelper = Requirement{
		Feature:   "bpf_task_storage_get from tracing programs",
		MinKernel: "5.11",
		Probe:     bpfProbe(func() error { return features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnTaskStorageGet) }),
	}
)

// storageFunctions are the functions of interest of the task storage
// operations: the helpers (6.12 also has _recur variants for programs that
// may recurse), the lookup in the task's storage, and, for creates, the
// update that allocates and links it and the delete.
var storageFunctions = map[bpf.StorageOp][]string{
	bpf.StorageGet:          {"bpf_task_storage_get", "bpf_task_storage_get_recur", "bpf_local_storage_lookup"},
	bpf.StorageCreateDelete: {"bpf_task_storage_get", "bpf_task_storage_get_recur", "bpf_local_storage_update", "bpf_task_storage_delete", "bpf_task_storage_delete_recur", "bpf_selem_unlink"},
}

func storageBenchmarks() []*Benchmark {
	docs := map[bpf.StorageOp]string{
		bpf.StorageBaseline:     "bpf_get_current_task_btf() only: subtract it from get and create_delete; no map.",
		bpf.StorageGet:          "bpf_task_storage_get(F_CREATE) of the storage the running task already has: the cached lookup (local-storage-cache-seq-get, one map).",
		bpf.StorageCreateDelete: "bpf_task_storage_get(F_CREATE) of storage the task does not have, then bpf_task_storage_delete: one create and one delete per op (local-storage-create makes new tasks instead).",
	}
	drivers := map[bpf.StorageDriver]string{
		bpf.RawTracepoint: "a raw tracepoint program run by BPF_PROG_TEST_RUN",
		bpf.Fentry:        "an fentry program on " + bpf.TaskStorageTarget + ", run by BPF_PROG_TEST_RUN of a tracing program",
	}
	var out []*Benchmark
	for _, d := range []bpf.StorageDriver{bpf.RawTracepoint, bpf.Fentry} {
		for _, op := range []bpf.StorageOp{bpf.StorageBaseline, bpf.StorageGet, bpf.StorageCreateDelete} {
			s := bpf.TaskStorageBench{Op: op, Driver: d}
			reqs := []Requirement{ReqBPFLoop, ReqKernelBTF, ReqTaskStorageHelper}
			if d == bpf.Fentry {
				reqs = append(reqs, ReqFentry)
			}
			if op != bpf.StorageBaseline {
				reqs = append([]Requirement{ReqTaskStorage}, reqs...)
			}
			b := &Benchmark{
				Name:      fmt.Sprintf("TaskStorage/prog=%s/op=%s", d, op),
				Doc:       docs[op] + " In-kernel ktime around one bpf_loop of 10000 iterations in " + drivers[d] + " (task storage helpers exist for tracing and LSM programs, not XDP); the task is the guest's benchmark thread.",
				Requires:  reqs,
				Functions: storageFunctions[op],
				Run:       storageRun(s),
				Spec:      func(Params) (*ebpf.CollectionSpec, error) { return s.Spec() },
				Programs:  []string{s.ProgName()},
			}
			if op != bpf.StorageBaseline {
				b.Instance = storageInstance(s)
			}
			out = append(out, b)
		}
	}
	return out
}

// storageBench is a loaded task storage program, attached if it is an
// fentry program, run on one OS thread so that its task stays the same.
type storageBench struct {
	prog  *ebpf.Program
	stats *ebpf.Map
}

// sample zeroes the stats, runs the program rounds times (one
// BPF_PROG_TEST_RUN each: neither raw tracepoint nor tracing test runs
// repeat) and returns what it counted. The caller holds its OS thread.
func (s *storageBench) sample(rounds int) (Sample, error) {
	if err := s.stats.Update(uint32(0), bpf.Stats{}, ebpf.UpdateAny); err != nil {
		return Sample{}, fmt.Errorf("reset stats: %w", err)
	}
	for range rounds {
		ret, err := s.prog.Run(&ebpf.RunOptions{})
		if err != nil {
			return Sample{}, fmt.Errorf("run program: %w", err)
		}
		if ret != 0 {
			return Sample{}, fmt.Errorf("program returned %d, want 0", ret)
		}
	}
	var st bpf.Stats
	if err := s.stats.Lookup(uint32(0), &st); err != nil {
		return Sample{}, fmt.Errorf("read stats: %w", err)
	}
	if err := st.Check(); err != nil {
		return Sample{}, err
	}
	if st.Runs != uint64(rounds) {
		return Sample{}, fmt.Errorf("the program ran %d times in %d test runs", st.Runs, rounds)
	}
	return Sample{Ops: st.Iterations, Elapsed: st.Nanoseconds}, nil
}

// storagePrepare loads (and for fentry attaches) a task storage program.
func storagePrepare(r *Run, s bpf.TaskStorageBench) (*storageBench, func(), error) {
	s.Marks = r.Params.windowMarks()
	spec, err := s.Spec()
	if err != nil {
		return nil, nil, err
	}
	coll, err := loadCollection(r, "task storage "+s.Op.String()+" program", spec)
	if err != nil {
		return nil, nil, err
	}
	closeAll := coll.Close
	prog := coll.Programs[s.ProgName()]
	if s.Driver == bpf.Fentry {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			coll.Close()
			return nil, nil, untraceable(fmt.Errorf("attach fentry to %s: %w", bpf.TaskStorageTarget, err), bpf.TaskStorageTarget)
		}
		closeAll = func() { l.Close(); coll.Close() }
	}
	return &storageBench{prog: prog, stats: coll.Maps[bpf.StatsMapName]}, closeAll, nil
}

func storageRun(s bpf.TaskStorageBench) func(*Run) error {
	run := runPrepared(func(r *Run) (*storageBench, func(), error) { return storagePrepare(r, s) })
	return func(r *Run) error {
		// One task for all runs: the storage belongs to it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		return run(r)
	}
}

// storageInstance is storagePrepare for the insight pass; Operate runs
// one sample's worth of test runs on a locked thread (PathTestRun: the
// program runs from BPF_PROG_TEST_RUN, which kprobes see).
func storageInstance(s bpf.TaskStorageBench) func(Params, func(string, ...any)) (*Instance, error) {
	return func(p Params, logf func(string, ...any)) (*Instance, error) {
		b, closeAll, err := storagePrepare(&Run{Params: p, Logf: logf, Info: func(string) {}}, s)
		if err != nil {
			return nil, err
		}
		return &Instance{Programs: map[string]*ebpf.Program{s.ProgName(): b.prog}, Path: PathTestRun, Close: closeAll,
			Operate: func() (uint64, error) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				st, err := b.sample(p.Rounds)
				return st.Ops, err
			}}, nil
	}
}

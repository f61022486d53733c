package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// taskStorageMapName is the name of the task local storage map in
// TaskStorageBench's collection.
const taskStorageMapName = "bench_task_stg"

// TaskStorageTarget is the kernel function TaskStorageBench's fentry
// program attaches to: BPF_PROG_TEST_RUN of a tracing program calls it
// (among others) once per run.
const TaskStorageTarget = "bpf_fentry_test1"

// bpfLocalStorageGetFCreate is BPF_LOCAL_STORAGE_GET_F_CREATE.
const bpfLocalStorageGetFCreate = 1

// StorageOp is the operation a TaskStorageBench times, once per loop
// iteration, on the current task.
type StorageOp int

const (
	// StorageBaseline gets the current task (bpf_get_current_task_btf)
	// and nothing else: subtract it from the others.
	StorageBaseline StorageOp = iota
	// StorageGet is bpf_task_storage_get(F_CREATE) of the storage the
	// task already has (created by the warm-up): the cached fast path
	// (the kernel bench's local-storage-cache-seq-get with one map).
	StorageGet
	// StorageCreateDelete is bpf_task_storage_get(F_CREATE) of storage the
	// task does not have, then bpf_task_storage_delete: one create and one
	// delete per iteration (the kernel bench's local-storage-create creates on new
	// tasks; here the task stays and its storage comes and goes).
	StorageCreateDelete
)

var storageOpNames = [...]string{"baseline", "get", "create_delete"}

// String returns the name used in benchmark names.
func (o StorageOp) String() string {
	if o >= 0 && int(o) < len(storageOpNames) {
		return storageOpNames[o]
	}
	return fmt.Sprintf("StorageOp(%d)", int(o))
}

// StorageDriver is the kind of program a TaskStorageBench runs in: task
// storage helpers exist only for tracing and LSM programs, not XDP.
type StorageDriver int

const (
	// RawTracepoint: a raw tracepoint program run directly by
	// BPF_PROG_TEST_RUN (Linux 5.10), never attached.
	RawTracepoint StorageDriver = iota
	// Fentry: an fentry program on TaskStorageTarget, attached, run by
	// BPF_PROG_TEST_RUN of itself (Linux 5.5, kernel BTF).
	Fentry
)

// String returns the name used in benchmark names.
func (d StorageDriver) String() string {
	if d == Fentry {
		return "fentry"
	}
	return "raw_tp"
}

// TaskStorageBench describes a task local storage benchmark program timed
// around bpf_loop (see timedLoop); it returns 0.
type TaskStorageBench struct {
	Op     StorageOp
	Driver StorageDriver
	// Loops is the number of bpf_loop iterations per run; 0 means
	// LoopIterations.
	Loops uint32
	// Marks, when set, bracket the timed bpf_loop for the memory plugin.
	Marks WindowMarks
}

// ProgName is the name of the program in the spec, e.g. "task_stg_get".
func (s TaskStorageBench) ProgName() string { return "task_stg_" + s.Op.String() }

// taskStorageSpec returns the spec of the task local storage map: int
// keys (a pidfd from user space), u64 values, BPF_F_NO_PREALLOC, as the
// kernel requires. Requires Linux 5.11.
func taskStorageSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: taskStorageMapName, Type: ebpf.TaskStorage, KeySize: 4, ValueSize: 8, Flags: unix.BPF_F_NO_PREALLOC,
		Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, Value: &btf.Int{Name: "u64", Size: 8}}
}

// Spec returns the collection: the program ProgName() (a raw tracepoint
// program, or an fentry program on TaskStorageTarget), the stats map and,
// but for the baseline, the task storage map. A NULL from
// bpf_task_storage_get records -ENOENT as the failure, a failed delete its
// error.
//
// Requires Linux 5.17 (bpf_loop), 5.11 (task storage helpers from tracing
// programs, bpf_get_current_task_btf) and kernel BTF.
func (s TaskStorageBench) Spec() (*ebpf.CollectionSpec, error) {
	if s.Op < StorageBaseline || s.Op > StorageCreateDelete {
		return nil, fmt.Errorf("task storage program: unknown operation %v", s.Op)
	}
	if err := checkLoops(s.Loops); err != nil {
		return nil, fmt.Errorf("task storage program: %w", err)
	}
	t := timedLoop{name: s.ProgName(), loops: loopsOr(s.Loops), retZero: true, marks: s.Marks}
	insns := append(t.main(), s.callback()...)
	prog := &ebpf.ProgramSpec{Name: s.ProgName(), Type: ebpf.RawTracepoint, License: "GPL", Instructions: insns}
	if s.Driver == Fentry {
		prog.Type, prog.AttachType, prog.AttachTo = ebpf.Tracing, ebpf.AttachTraceFEntry, TaskStorageTarget
	}
	maps := map[string]*ebpf.MapSpec{StatsMapName: statsSpec()}
	if s.Op != StorageBaseline {
		maps[taskStorageMapName] = taskStorageSpec()
	}
	return &ebpf.CollectionSpec{Maps: maps, Programs: map[string]*ebpf.ProgramSpec{prog.Name: prog}}, nil
}

func (s TaskStorageBench) callback() asm.Instructions {
	insns := asm.Instructions{
		btf.WithFuncMetadata(asm.Mov.Reg(asm.R6, asm.R1), loopCallbackFunc(s.ProgName()+"_cb")).WithSymbol(callbackSymbol), // index, for failures
		asm.FnGetCurrentTaskBtf.Call(),
	}
	if s.Op == StorageBaseline {
		return append(insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R8, asm.R0), // the task
		asm.Mov.Reg(asm.R2, asm.R8),
		asm.LoadMapPtr(asm.R1, 0).WithReference(taskStorageMapName),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, bpfLocalStorageGetFCreate),
		asm.FnTaskStorageGet.Call(),
		asm.JNE.Imm(asm.R0, 0, "got"),
		asm.Mov.Imm(asm.R0, -int32(unix.ENOENT)),
		asm.Ja.Label("op_failed"),
	)
	if s.Op == StorageGet {
		insns[len(insns)-3] = asm.JNE.Imm(asm.R0, 0, "op_ok")
	} else {
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, 0).WithReference(taskStorageMapName).WithSymbol("got"),
			asm.Mov.Reg(asm.R2, asm.R8),
			asm.FnTaskStorageDelete.Call(),
			asm.JNE.Imm(asm.R0, 0, "op_failed"),
		)
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("op_ok"), asm.Return())
	return append(insns, recordFailure("op_failed", asm.R6, 1)...)
}

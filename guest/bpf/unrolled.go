package bpf

import (
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// UnrolledOps is the number of operations per run of an LPMUnrolled
// program. It keeps the program well under the 4096-instruction limit that
// kernels before 5.2 impose.
const UnrolledOps = 128

// LPMUnrolled describes an LPM trie lookup or update benchmark for kernels
// without bpf_loop: the program is a straight line of UnrolledOps
// operations between two bpf_ktime_get_ns calls. Its per-operation cost has
// no bpf_loop callback in it, so its numbers are comparable with other
// LPMUnrolled numbers, not with LPMBench ones.
type LPMUnrolled struct {
	Op        LPMOp // OpLookup or OpUpdate
	Keys      KeyOrder
	Entries   uint32
	PrefixLen uint32 // 0 means PrefixLen
	// Marks, when set, bracket the operations for the memory plugin,
	// inside the clock readings (and close the window on the failure
	// path too).
	Marks WindowMarks
}

// ProgName is the name of the XDP program in the spec.
func (u LPMUnrolled) ProgName() string { return "lpm_unr_" + u.Op.String() }

// Spec returns the collection: the XDP program ProgName(), the stats map
// and the trie (empty: the caller fills it). Each run reads the clock, does
// UnrolledOps operations with keys built as LPMBench does, reads the clock
// again and adds the elapsed time, UnrolledOps iterations and one run to the
// stats. A miss or an update error is recorded as a failure and ends the run
// early (without adding to Iterations). It returns RetDone.
//
// Requires Linux 4.12 (BPF_PROG_TEST_RUN for XDP) and 4.11 (LPM trie).
func (u LPMUnrolled) Spec() (*ebpf.CollectionSpec, error) {
	l := LPMBench{Op: u.Op, Keys: u.Keys, Entries: u.Entries, PrefixLen: u.PrefixLen}
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("unrolled LPM %v program: %w", u.Op, err)
	}
	if u.Op != OpLookup && u.Op != OpUpdate {
		return nil, fmt.Errorf("unrolled LPM program: operation %v not supported (lookup or update)", u.Op)
	}
	prefixLen := l.prefixLen()
	insns := asm.Instructions{
		asm.LoadMapValue(asm.R7, 0, 0).WithReference(StatsMapName),
		asm.LoadMem(asm.R9, asm.R7, offCursor, asm.DWord), // sequential cursor
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
	}
	if u.Marks.Start != 0 {
		insns = append(insns, asm.Mov.Imm(asm.R1, u.Marks.Start))
	}
	for i := range UnrolledOps {
		switch u.Keys {
		case RandomKeys:
			insns = append(insns,
				asm.FnGetPrandomU32.Call(),
				asm.Mod.Imm32(asm.R0, int32(u.Entries)),
			)
		case SequentialKeys:
			insns = append(insns,
				asm.Mov.Reg(asm.R0, asm.R9),
				asm.Add.Imm(asm.R0, int32(i)),
				asm.Mod.Imm(asm.R0, int32(u.Entries)),
			)
		}
		insns = append(insns, asm.Mov.Reg(asm.R8, asm.R0))
		insns = append(insns, storeKey(asm.R0, prefixLen, BigEndianKeys)...)
		switch u.Op {
		case OpLookup:
			insns = append(insns, lookupKey()...)
			insns = append(insns, asm.JEq.Imm(asm.R0, 0, "lookup_missed"))
		case OpUpdate:
			insns = append(insns, updateKey(asm.R8, unix.BPF_EXIST)...)
			insns = append(insns, asm.JNE.Imm(asm.R0, 0, "op_failed"))
		}
	}
	if u.Marks.Stop != 0 {
		insns = append(insns, asm.Mov.Imm(asm.R1, u.Marks.Stop))
	}
	insns = append(insns, stopClock()...)
	insns = append(insns,
		asm.Mov.Imm(asm.R1, UnrolledOps),
		atomicAdd(asm.R7, offIterations, asm.R1),
	)
	if u.Keys == SequentialKeys {
		insns = append(insns,
			asm.Add.Imm(asm.R9, UnrolledOps),
			asm.Mod.Imm(asm.R9, int32(u.Entries)),
			asm.StoreMem(asm.R7, offCursor, asm.R9, asm.DWord),
		)
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R0, RetDone),
		asm.Return(),
	)
	if u.Op == OpLookup {
		insns = append(insns, asm.Mov.Imm(asm.R0, -int32(unix.ENOENT)).WithSymbol("lookup_missed"))
	}
	failed := recordFailure("op_failed", asm.R8, RetDone)
	if u.Marks.Stop != 0 { // after the label's r3 = r0; r1 is free until the stats' address
		failed = slices.Insert(failed, 1, asm.Mov.Imm(asm.R1, u.Marks.Stop))
	}
	insns = append(insns, failed...)
	prog := &ebpf.ProgramSpec{Name: u.ProgName(), Type: ebpf.XDP, License: "Dual MIT/GPL", Instructions: insns}
	return &ebpf.CollectionSpec{
		Maps:     map[string]*ebpf.MapSpec{StatsMapName: statsSpec(), TrieMapName: TrieSpec(u.Entries)},
		Programs: map[string]*ebpf.ProgramSpec{prog.Name: prog},
	}, nil
}

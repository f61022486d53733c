package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// BranchPattern is the outcome pattern of BranchBench's one conditional
// branch, a control of the memory pass's branch model (docs/cycles.md):
// what a predictor of the kind it models must get right, and what it
// cannot.
type BranchPattern int

const (
	// BranchTaken is taken at every iteration: the program compares a
	// value it reads from its stats map (always 0, which the verifier
	// cannot know, so it keeps the branch) with 0.
	BranchTaken BranchPattern = iota
	// BranchAlternating is taken at every other iteration (the loop
	// index's low bit): a predictor with any history predicts it once
	// warm.
	BranchAlternating
	// BranchRandom follows the low bit of bpf_get_prandom_u32(): no
	// predictor does better than half.
	BranchRandom
)

var branchPatternNames = [...]string{"taken", "alternating", "random"}

// String returns the name used in benchmark names.
func (p BranchPattern) String() string {
	if p >= 0 && int(p) < len(branchPatternNames) {
		return branchPatternNames[p]
	}
	return fmt.Sprintf("BranchPattern(%d)", int(p))
}

// BranchBench is a program timed around bpf_loop (see timedLoop) whose
// callback takes one conditional branch in Pattern, and on either side of
// it adds a different constant to a stack slot, so that the two paths
// differ and the JIT keeps the branch.
type BranchBench struct {
	Pattern BranchPattern
	// Loops is the number of bpf_loop iterations per run; 0 means
	// LoopIterations.
	Loops uint32
	// Marks, when set, bracket the timed bpf_loop for the memory plugin.
	Marks WindowMarks
}

// ProgName is the name of the XDP program, e.g. "branch_random".
func (b BranchBench) ProgName() string { return "branch_" + b.Pattern.String() }

// Spec returns the collection: the XDP program ProgName() and the stats
// map. Requires Linux 5.17 (bpf_loop).
func (b BranchBench) Spec() (*ebpf.CollectionSpec, error) {
	if b.Pattern < BranchTaken || b.Pattern > BranchRandom {
		return nil, fmt.Errorf("branch program: unknown pattern %v", b.Pattern)
	}
	if err := checkLoops(b.Loops); err != nil {
		return nil, fmt.Errorf("branch program: %w", err)
	}
	loops := b.Loops
	if loops == 0 {
		loops = LoopIterations
	}
	t := timedLoop{name: b.ProgName(), loops: loops, marks: b.Marks}
	prog := &ebpf.ProgramSpec{
		Name:         b.ProgName(),
		Type:         ebpf.XDP,
		License:      "Dual MIT/GPL",
		Instructions: append(t.main(), b.callback()...),
	}
	return &ebpf.CollectionSpec{
		Maps:     map[string]*ebpf.MapSpec{StatsMapName: statsSpec()},
		Programs: map[string]*ebpf.ProgramSpec{prog.Name: prog},
	}, nil
}

// callback is long cb(u64 index, void *ctx): r0 is the value the branch
// tests (taken when it is 0 for BranchTaken, when it is 1 for the
// others), the branch's two sides add 1 or 2 to fp-8, and the callback
// returns 0.
func (b BranchBench) callback() asm.Instructions {
	var insns asm.Instructions
	branch := asm.JNE.Imm(asm.R0, 0, "other_side")
	switch b.Pattern {
	case BranchTaken:
		insns = asm.Instructions{
			asm.LoadMapValue(asm.R0, 0, 0).WithReference(StatsMapName),
			asm.LoadMem(asm.R0, asm.R0, offFailures, asm.DWord), // 0: no failures
		}
		branch = asm.JEq.Imm(asm.R0, 0, "other_side")
	case BranchAlternating:
		insns = asm.Instructions{asm.Mov.Reg(asm.R0, asm.R1), asm.And.Imm(asm.R0, 1)}
	case BranchRandom:
		insns = asm.Instructions{asm.FnGetPrandomU32.Call(), asm.And.Imm(asm.R0, 1)}
	}
	insns[0] = btf.WithFuncMetadata(insns[0], loopCallbackFunc("branch_"+b.Pattern.String()+"_cb")).WithSymbol(callbackSymbol)
	return append(insns,
		asm.StoreImm(asm.RFP, -8, 0, asm.Word),
		branch,
		asm.Mov.Imm(asm.R1, 1),
		asm.Ja.Label("joined"),
		asm.Mov.Imm(asm.R1, 2).WithSymbol("other_side"),
		asm.LoadMem(asm.R2, asm.RFP, -8, asm.Word).WithSymbol("joined"),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.RFP, -8, asm.R2, asm.Word),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
}

package bpf

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// cursorMode is how the main function of a timed loop keeps stats.cursor,
// the next key of a sequential walk.
type cursorMode int

const (
	// cursorNone: the keys do not depend on the cursor (noop, random keys).
	cursorNone cursorMode = iota
	// cursorWrap: cursor = (cursor + iterations) % entries, so successive
	// runs continue the walk where the previous one stopped.
	cursorWrap
	// cursorConsume: cursor += iterations, and a run does at most
	// entries - cursor iterations; a run that finds none left returns
	// RetNeedsReset (insert fills a map, delete empties it).
	cursorConsume
)

// WindowMarks are the immediates of two marker instructions, `r1 = imm`,
// that a timed loop puts around its bpf_loop call (inside the clock
// readings) when not 0: the x86 JIT emits each as `mov $imm, %edi`, which
// the memory plugin recognises (wire.MemWindowStart, wire.MemWindowStop).
// Only the memory pass loads marked programs: the marks are two
// instructions per run inside the timed window.
type WindowMarks struct{ Start, Stop int32 }

// timedLoop is the main function of a program timed around one bpf_loop,
// shared by every family of XDP and tracing benchmarks: it reads
// bpf_ktime_get_ns, calls bpf_loop(loops, callback, &ctx, 0) with
// ctx.cursor = stats.cursor (fp-8), reads the clock again, and adds the
// elapsed time, the iterations and one run to the stats. The callback
// follows it, labelled callbackSymbol.
//
// Requires Linux 5.17 (bpf_loop).
type timedLoop struct {
	// name is the program's (main function's) name.
	name string
	// loops is the number of bpf_loop iterations per run.
	loops uint32
	// entries bounds the cursor (cursorWrap, cursorConsume).
	entries uint32
	cursor  cursorMode
	// retZero makes the program return 0 instead of RetDone: fentry and
	// fexit programs must.
	retZero bool
	// marks bracket the bpf_loop call, inside the clock readings.
	marks WindowMarks
}

// main returns the instructions of the main function; it returns RetDone
// (or RetNeedsReset, see cursorConsume; 0 with retZero).
func (t timedLoop) main() asm.Instructions {
	loops := int32(t.loops)
	done := int32(RetDone)
	if t.retZero {
		done = 0
	}
	insns := asm.Instructions{
		// r7 = &stats (callee-saved across helper calls).
		btf.WithFuncMetadata(asm.LoadMapValue(asm.R7, 0, 0).WithReference(StatsMapName), globalFunc(t.name)),
		// ctx.cursor = stats.cursor (always initialised: the verifier
		// rejects reads of uninitialised stack in the callback).
		asm.LoadMem(asm.R1, asm.R7, offCursor, asm.DWord),
		asm.StoreMem(asm.RFP, ctxCursor, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R9, loops),
	}
	if t.cursor == cursorConsume {
		insns = append(insns,
			// r9 = min(entries - cursor, loops); nothing left: reset.
			asm.Mov.Imm(asm.R9, int32(t.entries)),
			asm.Sub.Reg(asm.R9, asm.R1),
			asm.JLE.Imm(asm.R9, loops, "loops_set"),
			asm.Mov.Imm(asm.R9, loops),
			asm.JEq.Imm(asm.R9, 0, "needs_reset").WithSymbol("loops_set"),
		)
	}
	insns = append(insns,
		// r6 = start time.
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
	)
	if t.marks.Start != 0 {
		insns = append(insns, asm.Mov.Imm(asm.R1, t.marks.Start))
	}
	insns = append(insns,
		// r0 = bpf_loop(r9, callback, &ctx, 0)
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(callbackSymbol),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, ctxCursor),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnLoop.Call(),
	)
	if t.marks.Stop != 0 {
		insns = append(insns, asm.Mov.Imm(asm.R1, t.marks.Stop))
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R8, asm.R0),
	)
	insns = append(insns, stopClock()...)
	insns = append(insns,
		asm.JSLT.Imm(asm.R8, 0, "loop_failed"),
		atomicAdd(asm.R7, offIterations, asm.R8),
	)
	switch t.cursor {
	case cursorConsume:
		insns = append(insns,
			// stats.cursor += iterations: keys used up so far.
			atomicAdd(asm.R7, offCursor, asm.R8),
		)
	case cursorWrap:
		insns = append(insns,
			// stats.cursor = (stats.cursor + iterations) % entries
			asm.LoadMem(asm.R1, asm.R7, offCursor, asm.DWord),
			asm.Add.Reg(asm.R1, asm.R8),
			asm.Mod.Imm(asm.R1, int32(t.entries)),
			asm.StoreMem(asm.R7, offCursor, asm.R1, asm.DWord),
		)
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R0, done),
		asm.Return(),
		asm.StoreMem(asm.R7, offLoopError, asm.R8, asm.DWord).WithSymbol("loop_failed"),
		asm.Mov.Imm(asm.R0, done),
		asm.Return(),
	)
	if t.cursor == cursorConsume {
		insns = append(insns,
			asm.Mov.Imm(asm.R0, RetNeedsReset).WithSymbol("needs_reset"),
			asm.Return(),
		)
	}
	return insns
}

// keyIndex emits the start of a bpf_loop callback (r1 = index, r2 = ctx):
// r0 = the number of the key of this iteration in [0, entries), drawn as
// bpf_get_prandom_u32() % entries (RandomKeys) or walked as
// (ctx.cursor + index) % entries (SequentialKeys). Its first instruction
// carries the callback's BTF and callbackSymbol.
func keyIndex(fn *btf.Func, keys KeyOrder, entries uint32) asm.Instructions {
	var insns asm.Instructions
	switch keys {
	case RandomKeys:
		insns = asm.Instructions{
			asm.FnGetPrandomU32.Call(),
			asm.Mod.Imm32(asm.R0, int32(entries)),
		}
	case SequentialKeys:
		insns = asm.Instructions{
			asm.LoadMem(asm.R0, asm.R2, 0, asm.DWord), // ctx->cursor
			asm.Add.Reg(asm.R0, asm.R1),
			asm.Mod.Imm(asm.R0, int32(entries)),
		}
	}
	insns[0] = btf.WithFuncMetadata(insns[0], fn).WithSymbol(callbackSymbol)
	return insns
}

// emptyCallback is a bpf_loop callback that does nothing (the noop
// control).
func emptyCallback(name string) asm.Instructions {
	return asm.Instructions{
		btf.WithFuncMetadata(asm.Mov.Imm(asm.R0, 0), loopCallbackFunc(name)).WithSymbol(callbackSymbol),
		asm.Return(),
	}
}

package bpf

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// Each pattern's program assembles, with its marks around the loop when
// asked, and keeps one conditional branch on the pattern's value in its
// callback (JEq for the branch always taken, JNE on the low bit else).
func TestBranchBenchSpec(t *testing.T) {
	for _, pat := range []BranchPattern{BranchTaken, BranchAlternating, BranchRandom} {
		b := BranchBench{Pattern: pat, Marks: WindowMarks{Start: 1, Stop: 2}}
		spec, err := b.Spec()
		if err != nil {
			t.Fatalf("%v: %v", pat, err)
		}
		prog := spec.Programs[b.ProgName()]
		if prog == nil || spec.Maps[StatsMapName] == nil {
			t.Fatalf("%v: programs %v, maps %v; want %s and the stats map", pat, spec.Programs, spec.Maps, b.ProgName())
		}
		var code bytes.Buffer
		if err := prog.Instructions.Marshal(&code, binary.LittleEndian); err != nil {
			t.Errorf("%v: Marshal() = %v", pat, err)
		}
		start := slices.IndexFunc(prog.Instructions, func(ins asm.Instruction) bool { return ins.Symbol() == callbackSymbol })
		if start < 0 {
			t.Fatalf("%v: no callback", pat)
		}
		cb := prog.Instructions[start:]
		want := asm.JNE
		if pat == BranchTaken {
			want = asm.JEq
		}
		n := 0
		for _, ins := range cb {
			if ins.OpCode.JumpOp() == want {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%v: %d %v branches in the callback; want 1", pat, n, want)
		}
	}
	if _, err := (BranchBench{Pattern: BranchPattern(7)}).Spec(); err == nil {
		t.Error("BranchBench{pattern 7}.Spec() = nil error; want an error")
	}
}

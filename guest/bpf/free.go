package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// FreeTrieName is the name of the trie whose freeing TrieFreeSpec times.
// The programs recognise the trie by its type and this name, so no other
// map's free is counted.
const FreeTrieName = "lpm_free_bench"

// FreeTarget is the kernel function the free benchmark attaches to: the
// workqueue function that frees a map once its last reference is gone. The
// kernel bench uses it because lpm_trie.c itself cannot be traced since
// Linux 6.13 (c83508da5620).
const FreeTarget = "bpf_map_free_deferred"

// Names of the programs in the spec returned by TrieFreeSpec.
const (
	FreeEntryProgName = "free_entry"
	FreeExitProgName  = "free_exit"
)

// MapStructOffsets are byte offsets of members of the running kernel's
// struct bpf_map, read from its BTF by MapOffsetsFromBTF.
type MapStructOffsets struct {
	Work    uint32 // struct work_struct work (the argument of FreeTarget)
	MapType uint32 // enum bpf_map_type map_type
	Name    uint32 // char name[16]
}

// MapOffsetsFromBTF finds the members of struct bpf_map in a kernel's BTF,
// looking into anonymous unions and structs (Linux 6.12 puts work in a
// union with an rcu_head).
func MapOffsetsFromBTF(spec *btf.Spec) (MapStructOffsets, error) {
	var s *btf.Struct
	if err := spec.TypeByName("bpf_map", &s); err != nil {
		return MapStructOffsets{}, fmt.Errorf("find struct bpf_map in kernel BTF: %w", err)
	}
	var off MapStructOffsets
	for _, m := range []struct {
		name string
		dst  *uint32
	}{{"work", &off.Work}, {"map_type", &off.MapType}, {"name", &off.Name}} {
		bits, ok := memberOffset(s.Members, m.name)
		if !ok {
			return MapStructOffsets{}, fmt.Errorf("struct bpf_map has no member %q in kernel BTF", m.name)
		}
		*m.dst = bits / 8
	}
	return off, nil
}

// memberOffset returns the bit offset of the named member, searching
// anonymous members recursively.
func memberOffset(members []btf.Member, name string) (uint32, bool) {
	for _, m := range members {
		if m.Name == name {
			return uint32(m.Offset), true
		}
		if m.Name != "" {
			continue
		}
		var inner []btf.Member
		switch t := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			inner = t.Members
		case *btf.Union:
			inner = t.Members
		}
		if off, ok := memberOffset(inner, name); ok {
			return uint32(m.Offset) + off, true
		}
	}
	return 0, false
}

// bpfMapTypeLPMTrie is BPF_MAP_TYPE_LPM_TRIE in enum bpf_map_type.
const bpfMapTypeLPMTrie = 11

// TrieFreeSpec returns the collection that times the freeing of tries
// named FreeTrieName: an fentry program on FreeTarget that records
// bpf_ktime_get_ns in stats.start, and an fexit program that adds the
// elapsed time to stats.nanoseconds and counts the free in stats.iterations
// and stats.runs. Both read the map's type and name with
// bpf_probe_read_kernel at the offsets given.
//
// Requires Linux 5.5 (fentry/fexit, bpf_probe_read_kernel) and kernel BTF
// (CONFIG_DEBUG_INFO_BTF) with an attachable bpf_map_free_deferred.
func TrieFreeSpec(off MapStructOffsets) (*ebpf.CollectionSpec, error) {
	if off.Work == 0 && off.MapType == 0 && off.Name == 0 {
		return nil, errors.New("trie free programs: no struct bpf_map offsets")
	}
	entry := append(asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord), // work
	}, matchFreeTrie(off)...)
	entry = append(entry,
		asm.FnKtimeGetNs.Call(),
		asm.LoadMapValue(asm.R7, 0, 0).WithReference(StatsMapName),
		asm.StoreMem(asm.R7, offStart, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	exit := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),               // end time, read first
		asm.LoadMem(asm.R6, asm.R6, 0, asm.DWord), // work
	}
	exit = append(exit, matchFreeTrie(off)...)
	exit = append(exit,
		asm.LoadMapValue(asm.R7, 0, 0).WithReference(StatsMapName),
		asm.LoadMem(asm.R1, asm.R7, offStart, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "out"),
		asm.Sub.Reg(asm.R9, asm.R1),
		atomicAdd(asm.R7, offNanoseconds, asm.R9),
		asm.Mov.Imm(asm.R1, 1),
		atomicAdd(asm.R7, offIterations, asm.R1),
		atomicAdd(asm.R7, offRuns, asm.R1),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R7, offStart, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	progs := map[string]*ebpf.ProgramSpec{
		FreeEntryProgName: {Name: FreeEntryProgName, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: FreeTarget, License: "Dual MIT/GPL", Instructions: entry},
		FreeExitProgName:  {Name: FreeExitProgName, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFExit, AttachTo: FreeTarget, License: "Dual MIT/GPL", Instructions: exit},
	}
	return &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{StatsMapName: statsSpec()}, Programs: progs}, nil
}

// matchFreeTrie emits a filter that jumps to "out" unless the struct
// bpf_map around the work_struct in r6 is an LPM trie named FreeTrieName.
// It uses the stack at fp-24..fp-1 and clobbers r0-r5.
func matchFreeTrie(off MapStructOffsets) asm.Instructions {
	var name [16]byte
	copy(name[:], FreeTrieName)
	insns := probeField(-8, 4, int32(off.MapType)-int32(off.Work))
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, -8, asm.Word),
		asm.JNE.Imm(asm.R1, bpfMapTypeLPMTrie, "out"),
	)
	insns = append(insns, probeField(-24, 16, int32(off.Name)-int32(off.Work))...)
	return append(insns,
		asm.LoadMem(asm.R1, asm.RFP, -24, asm.DWord),
		asm.LoadImm(asm.R2, int64(binary.LittleEndian.Uint64(name[:8])), asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, "out"),
		asm.LoadMem(asm.R1, asm.RFP, -16, asm.DWord),
		asm.LoadImm(asm.R2, int64(binary.LittleEndian.Uint64(name[8:])), asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, "out"),
	)
}

// probeField copies size bytes at offset field from the pointer in r6 to
// the stack at fp+stack with bpf_probe_read_kernel, and jumps to "out" if
// the read fails. It clobbers r0-r5.
func probeField(stack int16, size, field int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(stack)),
		asm.Mov.Imm(asm.R2, size),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, field),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
	}
}

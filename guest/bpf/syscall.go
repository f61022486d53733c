package bpf

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// SyscallProgName is the name of the kprobe program of SyscallLookupsSpec.
const SyscallProgName = "lpm_syscall"

// maxSyscallLookups bounds the lookups per call of SyscallLookupsSpec.
const maxSyscallLookups = 256

// SyscallLookupsSpec returns a kprobe program that, each time it fires,
// adds 1 to stats.runs and looks key up lookups times in the trie
// TrieMapName (always the same key, as in the first LPM trie measurements,
// where a kprobe on gettid did 0, 1, 8 or 32 lookups per call). The trie
// holds entries keys (it may be empty) and is created with room for at least
// one.
//
// Requires Linux 4.11 (LPM trie) and kprobes (4.1).
func SyscallLookupsSpec(lookups int, entries uint32, key LPMKey) (*ebpf.CollectionSpec, error) {
	if lookups < 0 || lookups > maxSyscallLookups {
		return nil, fmt.Errorf("syscall lookups program: %d lookups out of range [0, %d]", lookups, maxSyscallLookups)
	}
	insns := asm.Instructions{
		asm.LoadMapValue(asm.R7, 0, 0).WithReference(StatsMapName),
		asm.Mov.Imm(asm.R1, 1),
		atomicAdd(asm.R7, offRuns, asm.R1),
		asm.StoreImm(asm.RFP, keyPrefixlen, int64(key.Prefixlen), asm.Word),
		// The data bytes as they lie in memory.
		asm.StoreImm(asm.RFP, keyData, int64(int32(binary.LittleEndian.Uint32(key.Data[:]))), asm.Word),
	}
	for range lookups {
		insns = append(insns, lookupKey()...)
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
	trie := TrieSpec(max(entries, 1))
	prog := &ebpf.ProgramSpec{Name: SyscallProgName, Type: ebpf.Kprobe, License: "GPL", Instructions: insns}
	return &ebpf.CollectionSpec{
		Maps:     map[string]*ebpf.MapSpec{StatsMapName: statsSpec(), TrieMapName: trie},
		Programs: map[string]*ebpf.ProgramSpec{prog.Name: prog},
	}, nil
}

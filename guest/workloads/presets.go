package workloads

import (
	"strings"

	"github.com/lpmbisect/lpmbisect/wire"
)

// Preset is a named selection of benchmarks. The host resolves preset names
// into their pattern before booting; the guest only sees patterns.
type Preset struct {
	Name    string
	Pattern string // regexp over full names without "Benchmark"
	Doc     string
}

// DefaultBench is the selection when none is given (wire.DefaultBench):
// the two LPM trie lookup benchmarks, a few seconds per boot under TCG.
const DefaultBench = wire.DefaultBench

// Presets are the named selections, in the order `lpmbisect list` shows
// them.
var Presets = []Preset{
	{"lookup", "^LPMTrie/op=lookup/", "LPM trie lookups with random and sequential keys (the default)"},
	{"controls", "^LPMTrie/op=(noop|baseline)(/|$)", "the harness (noop) and key generation (baseline) controls"},
	{"lpm", "^LPMTrie(Unrolled)?/", "the kernel's LPM trie bench: noop, baseline, lookup, update, insert, delete, free, and the unrolled programs for kernels without bpf_loop"},
	{"seed", "^LPMTrieSeed/", "the kernel bench's lookup, update and delete exactly as it runs them (keys in host byte order, the delete with its refill by one syscall per key): like with like against its published figures (docs/cycles.md)"},
	{"syscall", "^LPMTrieSyscall/", "lookups from a kprobe on gettid(): time per syscall and per lookup"},
	{"batch", "^MapBatch/", "map batch operations against one syscall per element"},
	{"ringbuf", "^RingBuf/", "ring buffer producers, swept up to the number of vCPUs"},
	{"hash", "^HashMap/", "hash, LRU and per-CPU hash map lookups and full-map updates at two key sizes, with their key-generation baseline (the kernel's bpf-hashmap-lookup and bpf-hashmap-full-update)"},
	{"bloom", "^BloomFilter/", "bloom filter lookups and updates, and hash map lookups with and without a bloom filter in front (the kernel's bloom-* and hashmap-with/without-bloom)"},
	{"storage", "^TaskStorage/", "task local storage gets and creates from raw tracepoint and fentry programs (the kernel's local-storage-*)"},
	{"branch", "^BranchModel/", "controls of the memory pass's branch model: one conditional branch per iteration, always taken, alternating, or random (docs/cycles.md)"},
	{"verifier", "^Verifier/", "the verifier's cost of lpmbisect's own programs (and of --workload's): verification time, instructions processed and verified, states, stack depth, program and JIT sizes"},
	{"all", ".", "every benchmark"},
}

// ResolveBench turns a --bench value into a pattern: a preset name (or a
// comma-separated list of them) becomes its pattern, anything else is taken
// as a regexp.
func ResolveBench(sel string) string {
	var pats []string
	for _, name := range strings.Split(sel, ",") {
		p, ok := presetPattern(name)
		if !ok {
			return sel
		}
		pats = append(pats, p)
	}
	if len(pats) == 1 {
		return pats[0]
	}
	return "(" + strings.Join(pats, ")|(") + ")"
}

func presetPattern(name string) (string, bool) {
	for _, p := range Presets {
		if p.Name == name {
			return p.Pattern, true
		}
	}
	return "", false
}

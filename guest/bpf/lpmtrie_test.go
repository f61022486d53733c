package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/rlimit"
)

func TestKeyFor(t *testing.T) {
	k := KeyFor(32, 0x0a000102)
	if want := (LPMKey{Prefixlen: 32, Data: [4]byte{0x0a, 0x00, 0x01, 0x02}}); k != want {
		t.Errorf("KeyFor(32, 0x0a000102) = %+v; want %+v", k, want)
	}
	if got := k.Value(); got != 0x0a000102 {
		t.Errorf("KeyFor(32, 0x0a000102).Value() = %#x; want 0x0a000102", got)
	}
	// Shorter prefixes hold the prefix number in their top bits.
	if got, want := KeyFor(24, 1), (LPMKey{Prefixlen: 24, Data: [4]byte{0, 0, 1, 0}}); got != want {
		t.Errorf("KeyFor(24, 1) = %+v; want %+v", got, want)
	}
	if got, want := KeyFor(8, 255), (LPMKey{Prefixlen: 8, Data: [4]byte{255, 0, 0, 0}}); got != want {
		t.Errorf("KeyFor(8, 255) = %+v; want %+v", got, want)
	}
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, KeyFor(32, 1)); err != nil {
		t.Fatal(err)
	}
	// The kernel's struct bpf_lpm_trie_key_u8: host-order prefixlen, then data.
	if got, want := buf.Bytes(), []byte{32, 0, 0, 0, 0, 0, 0, 1}; !bytes.Equal(got, want) {
		t.Errorf("marshalled KeyFor(32, 1) = %v; want %v", got, want)
	}
}

// Keys in host byte order are the kernel bench's: the number as a u32 as
// the host stores it (on x86 its low byte first), prefix length 32; the
// program stores them without the conversion to big-endian.
func TestHostOrderKeys(t *testing.T) {
	k := HostOrderKeys.Key(32, 0x01020304)
	var want [4]byte
	binary.NativeEndian.PutUint32(want[:], 0x01020304)
	if k.Prefixlen != 32 || k.Data != want {
		t.Errorf("HostOrderKeys.Key(32, 0x01020304) = %+v; want the u32 in host order", k)
	}
	if BigEndianKeys.Key(32, 7) != KeyFor(32, 7) {
		t.Errorf("BigEndianKeys.Key = %+v; want KeyFor's", BigEndianKeys.Key(32, 7))
	}
	host := LPMBench{Op: OpLookup, Keys: RandomKeys, Entries: 10000, Layout: HostOrderKeys}
	spec, err := host.Spec()
	if err != nil {
		t.Fatal(err)
	}
	be, _ := LPMBench{Op: OpLookup, Keys: RandomKeys, Entries: 10000}.Spec()
	if host.ProgName() != "lpm_lookup_host" || spec.Programs[host.ProgName()] == nil {
		t.Fatalf("program name %q, programs %v; want lpm_lookup_host", host.ProgName(), spec.Programs)
	}
	if n, m := len(spec.Programs[host.ProgName()].Instructions), len(be.Programs["lpm_lookup"].Instructions); n != m-1 {
		t.Errorf("host-order program has %d instructions, the big-endian one %d; want one fewer (no byte swap)", n, m)
	}
}

func TestStatsLayout(t *testing.T) {
	if got := binary.Size(Stats{}); got != statsSize {
		t.Errorf("binary.Size(Stats{}) = %d; want %d", got, statsSize)
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, Stats{Cursor: 7, Start: 9})
	if got := binary.LittleEndian.Uint64(buf.Bytes()[offCursor:]); got != 7 {
		t.Errorf("Stats{Cursor: 7} at offCursor = %d; want 7", got)
	}
	if got := binary.LittleEndian.Uint64(buf.Bytes()[offStart:]); got != 9 {
		t.Errorf("Stats{Start: 9} at offStart = %d; want 9", got)
	}
}

func TestTrieSpec(t *testing.T) {
	s := TrieSpec(10000)
	if s.Type != ebpf.LPMTrie || s.KeySize != 8 || s.MaxEntries != 10001 || s.Flags != 1 {
		t.Errorf("TrieSpec(10000) = %+v; want LPMTrie, KeySize 8, MaxEntries 10001, Flags BPF_F_NO_PREALLOC", s)
	}
}

func TestSpecRejects(t *testing.T) {
	for _, l := range []LPMBench{
		{Op: OpLookup, Entries: 0},
		{Op: OpLookup, Entries: math.MaxInt32 + 1},
		{Op: OpLookup, Entries: 10, Keys: KeyOrder(7)},
		{Op: OpLookup, Entries: 10, Loops: 1<<23 + 1},
		{Op: OpLookup, Entries: 300, PrefixLen: 8},
		{Op: OpLookup, Entries: 10, PrefixLen: 33},
		{Op: OpInsert, Entries: 10, Keys: RandomKeys},
		{Op: OpDelete, Entries: 10, Keys: RandomKeys},
		{Op: LPMOp(9), Entries: 10},
		{Op: OpLookup, Entries: 10, PrefixLen: 24, Layout: HostOrderKeys},
	} {
		if _, err := l.Spec(); err == nil {
			t.Errorf("%+v.Spec() = nil error; want an error", l)
		}
	}
	if _, err := (LPMBench{Op: OpLookup, Entries: 256, PrefixLen: 8}).Spec(); err != nil {
		t.Errorf("LPMBench{entries 256, prefix 8}.Spec() = %v; want nil (256 prefixes of 8 bits)", err)
	}
	if _, err := (LPMUnrolled{Op: OpDelete, Keys: SequentialKeys, Entries: 10}).Spec(); err == nil {
		t.Errorf("LPMUnrolled{delete}.Spec() = nil error; want an error (lookup and update only)")
	}
}

func allBenches(entries uint32) []LPMBench {
	var out []LPMBench
	for op := OpNoop; op <= OpDelete; op++ {
		for _, keys := range []KeyOrder{RandomKeys, SequentialKeys} {
			if op.consumesKeys() && keys == RandomKeys {
				continue
			}
			out = append(out, LPMBench{Op: op, Keys: keys, Entries: entries})
		}
	}
	return out
}

func TestSpecAssembles(t *testing.T) {
	for _, l := range allBenches(10000) {
		t.Run(l.Op.String()+"/"+l.Keys.String(), func(t *testing.T) {
			spec, err := l.Spec()
			if err != nil {
				t.Fatalf("%+v.Spec() = %v", l, err)
			}
			prog := spec.Programs[l.ProgName()]
			if prog == nil || prog.Type != ebpf.XDP {
				t.Fatalf("%+v.Spec() has no XDP program %q", l, l.ProgName())
			}
			var a, b bytes.Buffer
			if err := prog.Instructions.Marshal(&a, binary.LittleEndian); err != nil {
				t.Fatalf("Marshal() = %v", err)
			}
			again, _ := l.Spec()
			again.Programs[l.ProgName()].Instructions.Marshal(&b, binary.LittleEndian)
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("%+v.Spec() is not deterministic", l)
			}
			calls := map[asm.BuiltinFunc]int{}
			var funcs []*btf.Func
			for i, ins := range prog.Instructions {
				if fn := btf.FuncMetadata(&prog.Instructions[i]); fn != nil {
					funcs = append(funcs, fn)
				}
				if ins.IsBuiltinCall() {
					calls[asm.BuiltinFunc(ins.Constant)]++
				}
				if ins.IsLoadFromMap() {
					if _, ok := spec.Maps[ins.Reference()]; !ok {
						t.Errorf("instruction %d references map %q, not in the spec", i, ins.Reference())
					}
				}
			}
			want := map[LPMOp]asm.BuiltinFunc{OpLookup: asm.FnMapLookupElem, OpUpdate: asm.FnMapUpdateElem, OpInsert: asm.FnMapUpdateElem, OpDelete: asm.FnMapDeleteElem}
			if fn, ok := want[l.Op]; ok && calls[fn] != 1 {
				t.Errorf("program calls %v %d times; want once", fn, calls[fn])
			}
			if calls[asm.FnLoop] != 1 {
				t.Errorf("program calls bpf_loop %d times; want once", calls[asm.FnLoop])
			}
			if _, hasTrie := spec.Maps[TrieMapName]; hasTrie != l.Op.UsesTrie() {
				t.Errorf("spec has trie map: %v; want %v", hasTrie, l.Op.UsesTrie())
			}
			if len(funcs) != 2 || funcs[0].Linkage != btf.GlobalFunc || funcs[1].Linkage != btf.StaticFunc {
				t.Errorf("func metadata = %v; want a global main and a static callback", funcs)
			}
		})
	}
}

// skipWithoutBPF skips unless the running kernel can load XDP programs
// with bpf_loop (root and Linux 5.17).
func skipWithoutBPF(t *testing.T) {
	t.Helper()
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skipf("BPF unavailable: remove memlock limit: %v", err)
	}
	if err := features.HaveProgramHelper(ebpf.XDP, asm.FnLoop); err != nil {
		t.Skipf("BPF unavailable: XDP with bpf_loop: %v", err)
	}
}

func loadFilled(t *testing.T, spec *ebpf.CollectionSpec, entries, prefixLen uint32, skip uint32) *ebpf.Collection {
	t.Helper()
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			t.Logf("verifier: %+v", verr)
		}
		t.Fatalf("NewCollection() = %v", err)
	}
	t.Cleanup(coll.Close)
	if trie := coll.Maps[TrieMapName]; trie != nil {
		for i := uint32(0); i < entries; i++ {
			if i == skip {
				continue
			}
			if err := trie.Update(KeyFor(prefixLen, i), uint32(i), ebpf.UpdateAny); err != nil {
				t.Fatalf("Update(%d) = %v", i, err)
			}
		}
	}
	return coll
}

func runXDP(t *testing.T, prog *ebpf.Program, stats *ebpf.Map, rounds int) (Stats, uint32) {
	t.Helper()
	ret, err := prog.Run(&ebpf.RunOptions{Data: make([]byte, 14), Repeat: uint32(rounds)})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	var s Stats
	if err := stats.Lookup(uint32(0), &s); err != nil {
		t.Fatal(err)
	}
	return s, ret
}

// TestLPMBenchInKernel loads and runs every program in the running kernel,
// which needs root (or CAP_BPF and CAP_PERFMON) and Linux 5.17.
func TestLPMBenchInKernel(t *testing.T) {
	skipWithoutBPF(t)
	const entries = 3000
	for _, l := range allBenches(entries) {
		l.PrefixLen = 12 // 4096 prefixes: exercises the shift
		t.Run(l.Op.String()+"/"+l.Keys.String(), func(t *testing.T) {
			spec, err := l.Spec()
			if err != nil {
				t.Fatal(err)
			}
			fill := uint32(0)
			if l.Op.StartsFull() {
				fill = entries
			}
			coll := loadFilled(t, spec, fill, 12, math.MaxUint32)
			rounds := 2
			if l.Op.consumesKeys() {
				rounds = 1
			}
			s, ret := runXDP(t, coll.Programs[l.ProgName()], coll.Maps[StatsMapName], rounds)
			if err := s.Check(); err != nil {
				t.Fatalf("stats %+v: %v", s, err)
			}
			if ret != RetDone {
				t.Errorf("Run() = %d; want RetDone", ret)
			}
			wantIters := uint64(rounds * LoopIterations)
			if l.Op.consumesKeys() {
				wantIters = entries
			}
			if s.Iterations != wantIters || s.Runs != uint64(rounds) || s.Nanoseconds == 0 {
				t.Errorf("stats after %d runs = %+v; want %d iterations, some time", rounds, s, wantIters)
			}
			if l.Op.consumesKeys() {
				// All keys are used up: the next run must ask for a reset.
				s2, ret := runXDP(t, coll.Programs[l.ProgName()], coll.Maps[StatsMapName], 1)
				if ret != RetNeedsReset || s2.Iterations != s.Iterations {
					t.Errorf("second run = %d, stats %+v; want RetNeedsReset and no more iterations", ret, s2)
				}
				var v uint32
				err := coll.Maps[TrieMapName].Lookup(KeyFor(12, entries-1), &v)
				if got, want := err == nil, l.Op == OpInsert; got != want {
					t.Errorf("after %v of all keys, Lookup(last key) = %v", l.Op, err)
				}
			}
			t.Logf("%+v: %.1f ns/op", l, float64(s.Nanoseconds)/float64(s.Iterations))
		})
	}

	t.Run("miss", func(t *testing.T) {
		spec, _ := LPMBench{Op: OpLookup, Keys: SequentialKeys, Entries: entries}.Spec()
		coll := loadFilled(t, spec, entries, 32, 5)
		s, _ := runXDP(t, coll.Programs["lpm_lookup"], coll.Maps[StatsMapName], 1)
		if err := s.Check(); !errors.Is(err, ErrBadStats) {
			t.Errorf("Check() = %v; want ErrBadStats", err)
		}
		if s.Failures != 1 || s.FailKey != 5 || s.Iterations != 6 || int64(s.FailCode) != -2 {
			t.Errorf("stats with key 5 missing = %+v; want 1 failure (ENOENT) of key 5 after 6 iterations", s)
		}
	})
}

func TestLPMUnrolledInKernel(t *testing.T) {
	skipWithoutBPF(t)
	const entries = 1000
	for _, op := range []LPMOp{OpLookup, OpUpdate} {
		for _, keys := range []KeyOrder{RandomKeys, SequentialKeys} {
			u := LPMUnrolled{Op: op, Keys: keys, Entries: entries}
			t.Run(op.String()+"/"+keys.String(), func(t *testing.T) {
				spec, err := u.Spec()
				if err != nil {
					t.Fatal(err)
				}
				coll := loadFilled(t, spec, entries, 32, math.MaxUint32)
				s, _ := runXDP(t, coll.Programs[u.ProgName()], coll.Maps[StatsMapName], 3)
				if err := s.Check(); err != nil {
					t.Fatalf("stats %+v: %v", s, err)
				}
				if s.Iterations != 3*UnrolledOps || s.Runs != 3 {
					t.Errorf("stats after 3 runs = %+v; want %d iterations", s, 3*UnrolledOps)
				}
				if keys == SequentialKeys && s.Cursor != 3*UnrolledOps%entries {
					t.Errorf("cursor = %d; want %d", s.Cursor, 3*UnrolledOps%entries)
				}
				t.Logf("%+v: %.1f ns/op", u, float64(s.Nanoseconds)/float64(s.Iterations))
			})
		}
	}
}

// TestWindowMarks checks that marks bracket the bpf_loop call inside the
// clock readings in every family timed around one bpf_loop, and that an
// unmarked program has none.
func TestWindowMarks(t *testing.T) {
	marks := WindowMarks{Start: 0x4c504d01, Stop: 0x4c504d02}
	for _, marked := range []bool{false, true} {
		var m WindowMarks
		if marked {
			m = marks
		}
		for name, spec := range map[string]func() (*ebpf.CollectionSpec, error){
			"lpm":          LPMBench{Op: OpLookup, Keys: RandomKeys, Entries: 1000, Marks: m}.Spec,
			"hash":         HashBench{Kind: Hash, Op: HashLookup, Keys: SequentialKeys, KeySize: 4, Entries: 1000, Marks: m}.Spec,
			"bloom":        BloomBench{Op: BloomLookup, Hashes: 3, Entries: 1000, Marks: m}.Spec,
			"task storage": TaskStorageBench{Op: StorageGet, Marks: m}.Spec,
			"unrolled":     LPMUnrolled{Op: OpLookup, Keys: RandomKeys, Entries: 1000, Marks: m}.Spec,
		} {
			cs, err := spec()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var seq []string
			for _, p := range cs.Programs {
				for _, ins := range p.Instructions {
					switch {
					case ins.IsBuiltinCall() && ins.Constant == int64(asm.FnKtimeGetNs):
						seq = append(seq, "clock")
					case ins.IsBuiltinCall() && ins.Constant == int64(asm.FnLoop):
						seq = append(seq, "loop")
					case ins.OpCode == asm.Mov.Op(asm.ImmSource) && ins.Dst == asm.R1 && (ins.Constant == int64(marks.Start) || ins.Constant == int64(marks.Stop)):
						seq = append(seq, fmt.Sprintf("mark %#x", ins.Constant))
					}
				}
			}
			want := "clock loop clock"
			if marked {
				want = "clock mark 0x4c504d01 loop mark 0x4c504d02 clock"
			}
			if name == "unrolled" { // no bpf_loop; a stop mark on the failure path too
				want = "clock clock"
				if marked {
					want = "clock mark 0x4c504d01 mark 0x4c504d02 clock mark 0x4c504d02"
				}
			}
			if got := strings.Join(seq, " "); got != want {
				t.Errorf("%s, marked %v: %s; want %s", name, marked, got, want)
			}
		}
	}
}

package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
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
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, KeyFor(24, 1)); err != nil {
		t.Fatal(err)
	}
	// The kernel's struct bpf_lpm_trie_key_u8: host-order prefixlen, then data.
	if got, want := buf.Bytes(), []byte{24, 0, 0, 0, 0, 0, 0, 1}; !bytes.Equal(got, want) {
		t.Errorf("marshalled KeyFor(24, 1) = %v; want %v", got, want)
	}
}

func TestStatsLayout(t *testing.T) {
	if got := binary.Size(Stats{}); got != statsSize {
		t.Errorf("binary.Size(Stats{}) = %d; want %d", got, statsSize)
	}
	if got := StatsSpec().ValueSize; got != statsSize {
		t.Errorf("StatsSpec().ValueSize = %d; want %d", got, statsSize)
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, Stats{Cursor: 7})
	if got := binary.LittleEndian.Uint64(buf.Bytes()[offCursor:]); got != 7 {
		t.Errorf("Stats{Cursor: 7} at offCursor = %d; want 7", got)
	}
}

func TestTrieSpec(t *testing.T) {
	s := TrieSpec(10000)
	if s.Type != ebpf.LPMTrie || s.KeySize != 8 || s.MaxEntries != 10001 || s.Flags != 1 {
		t.Errorf("TrieSpec(10000) = %+v; want LPMTrie, KeySize 8, MaxEntries 10001, Flags BPF_F_NO_PREALLOC", s)
	}
}

func TestSpecRejects(t *testing.T) {
	for _, l := range []LPMLookup{
		{Entries: 0},
		{Entries: math.MaxInt32 + 1},
		{Entries: 10, Keys: KeyOrder(7)},
		{Entries: 10, Loops: 1<<23 + 1},
	} {
		if _, err := l.Spec(); err == nil {
			t.Errorf("%+v.Spec() = nil error; want an error", l)
		}
	}
}

func TestSpecAssembles(t *testing.T) {
	for _, keys := range []KeyOrder{RandomKeys, SequentialKeys} {
		t.Run(keys.String(), func(t *testing.T) {
			l := LPMLookup{Entries: 10000, Keys: keys}
			spec, err := l.Spec()
			if err != nil {
				t.Fatalf("%+v.Spec() = %v", l, err)
			}
			prog := spec.Programs[LPMLookupProgName]
			if prog == nil || prog.Type != ebpf.XDP {
				t.Fatalf("%+v.Spec() has no XDP program %q", l, LPMLookupProgName)
			}
			var a, b bytes.Buffer
			if err := prog.Instructions.Marshal(&a, binary.LittleEndian); err != nil {
				t.Fatalf("Marshal() = %v", err)
			}
			again, _ := l.Spec()
			again.Programs[LPMLookupProgName].Instructions.Marshal(&b, binary.LittleEndian)
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("%+v.Spec() is not deterministic", l)
			}

			var loops, mods, lookups int
			var funcs []*btf.Func
			for i, ins := range prog.Instructions {
				if fn := btf.FuncMetadata(&prog.Instructions[i]); fn != nil {
					funcs = append(funcs, fn)
				}
				switch {
				case ins.IsBuiltinCall() && ins.Constant == int64(asm.FnLoop):
					loops++
				case ins.IsBuiltinCall() && ins.Constant == int64(asm.FnMapLookupElem):
					lookups++
				case ins.OpCode.ALUOp() == asm.Mod && ins.Constant == 10000:
					mods++
				}
				if ins.IsLoadFromMap() {
					if _, ok := spec.Maps[ins.Reference()]; !ok {
						t.Errorf("instruction %d references map %q, not in the spec", i, ins.Reference())
					}
				}
			}
			if loops != 1 || lookups != 1 {
				t.Errorf("program has %d bpf_loop and %d lookup calls; want 1 and 1", loops, lookups)
			}
			wantMods := map[KeyOrder]int{RandomKeys: 1, SequentialKeys: 2}[keys]
			if mods != wantMods {
				t.Errorf("program has %d %% entries operations; want %d", mods, wantMods)
			}
			if len(funcs) != 2 || funcs[0].Linkage != btf.GlobalFunc || funcs[1].Linkage != btf.StaticFunc {
				t.Errorf("func metadata = %v; want a global main and a static callback", funcs)
			}
		})
	}
}

// TestLPMLookupInKernel loads and runs the program in the running kernel,
// which needs root (or CAP_BPF and CAP_PERFMON) and Linux 5.17.
func TestLPMLookupInKernel(t *testing.T) {
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skipf("BPF unavailable: remove memlock limit: %v", err)
	}
	if err := features.HaveProgramHelper(ebpf.XDP, asm.FnLoop); err != nil {
		t.Skipf("BPF unavailable: XDP with bpf_loop: %v", err)
	}
	const entries = 3000
	load := func(t *testing.T, keys KeyOrder, skip uint32) *ebpf.Collection {
		spec, err := LPMLookup{Entries: entries, Keys: keys}.Spec()
		if err != nil {
			t.Fatal(err)
		}
		coll, err := ebpf.NewCollection(spec)
		if err != nil {
			t.Fatalf("NewCollection() = %v", err)
		}
		t.Cleanup(coll.Close)
		for i := uint32(0); i < entries; i++ {
			if i == skip {
				continue
			}
			if err := coll.Maps[TrieMapName].Update(KeyFor(PrefixLen, i), uint32(i), ebpf.UpdateAny); err != nil {
				t.Fatalf("Update(%d) = %v", i, err)
			}
		}
		return coll
	}
	run := func(t *testing.T, coll *ebpf.Collection, rounds int) Stats {
		ret, err := coll.Programs[LPMLookupProgName].Run(&ebpf.RunOptions{Data: make([]byte, 14), Repeat: uint32(rounds)})
		if err != nil {
			t.Fatalf("Run() = %v", err)
		}
		if ret != 2 {
			t.Errorf("Run() = %d; want XDP_PASS (2)", ret)
		}
		var s Stats
		if err := coll.Maps[StatsMapName].Lookup(uint32(0), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	for _, keys := range []KeyOrder{RandomKeys, SequentialKeys} {
		t.Run(keys.String(), func(t *testing.T) {
			coll := load(t, keys, math.MaxUint32)
			s := run(t, coll, 2)
			if err := s.Check(); err != nil {
				t.Fatalf("stats %+v: %v", s, err)
			}
			if s.Iterations != 2*LoopIterations || s.Runs != 2 || s.Nanoseconds == 0 {
				t.Errorf("stats after 2 runs = %+v; want 20000 iterations, 2 runs, some time", s)
			}
			wantCursor := map[KeyOrder]uint64{RandomKeys: 0, SequentialKeys: 2 * LoopIterations % entries}[keys]
			if s.Cursor != wantCursor {
				t.Errorf("stats.Cursor = %d; want %d", s.Cursor, wantCursor)
			}
			t.Logf("%s: %.1f ns/op", keys, float64(s.Nanoseconds)/float64(s.Iterations))
		})
	}

	t.Run("miss", func(t *testing.T) {
		coll := load(t, SequentialKeys, 5)
		s := run(t, coll, 1)
		if err := s.Check(); !errors.Is(err, ErrBadStats) {
			t.Errorf("Check() = %v; want ErrBadStats", err)
		}
		if s.Misses != 1 || s.MissKey != 5 || s.Iterations != 6 {
			t.Errorf("stats with key 5 missing = %+v; want 1 miss of key 5 after 6 iterations", s)
		}
	})
}

package workloads

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/lpmbisect/lpmbisect/guest/bpf"
	"github.com/lpmbisect/lpmbisect/wire"
)

// A log as Debian 6.1 writes it for a rejected program at BPF_LOG_STATS:
// the reason, then the statistics.
var rejectedLog = []string{
	"0: R1=ctx(off=0,imm=0) R10=fp0",
	"; return data[20] == 17 ? XDP_DROP : XDP_PASS;",
	"1: (71) r1 = *(u8 *)(r1 +20)",
	"invalid access to packet, off=20 size=1, R1(id=0,off=20,r=0)",
	"R1 offset is outside of the packet",
	"processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0",
	"verification time 17 usec",
	"stack depth 0",
	"",
}

func TestParseVerifierStats(t *testing.T) {
	got := parseVerifierStats(rejectedLog)
	want := verifierStats{Processed: 2, HasMarkRead: true, Usec: 17, HasStack: true, Found: true}
	if got != want {
		t.Errorf("ParseVerifierStats(6.1 log) = %+v; want %+v", got, want)
	}
	// Subprograms' depths are summed, as veristat sums them.
	got = parseVerifierStats([]string{"processed 40 insns (limit 1000000) max_states_per_insn 0 total_states 3 peak_states 3 mark_read 1", "verification time 30 usec", "stack depth 16+8+0"})
	if !got.HasStack || got.StackBytes != 24 {
		t.Errorf("ParseVerifierStats(stack depth 16+8+0) = %+v; want 24 stack bytes", got)
	}
	// 6.12 dropped mark_read.
	got = parseVerifierStats([]string{"processed 25 insns (limit 1000000) max_states_per_insn 1 total_states 3 peak_states 3", "verification time 40 usec"})
	want = verifierStats{Processed: 25, MaxStatesPerInsn: 1, TotalStates: 3, PeakStates: 3, Usec: 40, Found: true}
	if got != want {
		t.Errorf("ParseVerifierStats(6.12 log) = %+v; want %+v", got, want)
	}
	if got := parseVerifierStats([]string{"0: R1=ctx()"}); got.Found {
		t.Errorf("ParseVerifierStats(no stats) = %+v; want not Found", got)
	}
}

// TestSpecFacts: a program's type and attach type get libbpf's names, as
// veristat writes them, and its size counts 8-byte instructions, a 64-bit
// immediate load two.
func TestSpecFacts(t *testing.T) {
	for _, c := range []struct {
		spec         *ebpf.ProgramSpec
		prog, attach string
		insns        uint64
	}{
		{&ebpf.ProgramSpec{Type: ebpf.XDP, AttachType: ebpf.AttachXDP, Instructions: asm.Instructions{asm.LoadImm(asm.R0, 1, asm.DWord), asm.Return()}}, "xdp", "xdp", 3},
		{&ebpf.ProgramSpec{Type: ebpf.Kprobe, Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}}, "kprobe", "cgroup_inet_ingress", 2},
		{&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry}, "tracing", "trace_fentry", 0},
		{&ebpf.ProgramSpec{Type: ebpf.RawTracepoint}, "raw_tracepoint", "cgroup_inet_ingress", 0},
		{&ebpf.ProgramSpec{Type: ebpf.SchedCLS}, "sched_cls", "cgroup_inet_ingress", 0},
	} {
		f := specFacts(c.spec)
		if f.ProgType != c.prog || f.AttachType != c.attach || f.Insns != c.insns {
			t.Errorf("specFacts(%v, %v) = %q, %q, %d insns; want %q, %q, %d", c.spec.Type, c.spec.AttachType, f.ProgType, f.AttachType, f.Insns, c.prog, c.attach, c.insns)
		}
	}
	seen := map[string]bool{}
	for _, n := range libbpfAttachTypes {
		if seen[n] {
			t.Errorf("two attach types named %s", n)
		}
		seen[n] = true
	}
}

func TestRejectionReason(t *testing.T) {
	got := rejectionReason(rejectedLog)
	want := "1: (71) r1 = *(u8 *)(r1 +20) | invalid access to packet, off=20 size=1, R1(id=0,off=20,r=0) | R1 offset is outside of the packet"
	if got != want {
		t.Errorf("RejectionReason() = %q; want %q", got, want)
	}
	long := rejectionReason([]string{strings.Repeat("é", wire.MaxVerifierErrorLen)})
	if len(long) > wire.MaxVerifierErrorLen || !strings.HasSuffix(long, "...") {
		t.Errorf("RejectionReason(long line) = %d bytes %q; want at most %d ending in ...", len(long), long, wire.MaxVerifierErrorLen)
	}
}

func TestVerifierSample(t *testing.T) {
	facts := loadFacts{ProgType: "xdp", AttachType: "xdp", Insns: 4}
	s := verifierSample(verifierStats{Processed: 2, Usec: 17, StackBytes: 8, HasStack: true, Found: true}, facts, "R1 offset is outside of the packet")
	if s.Ops != 1 || s.Elapsed != 17000 || len(s.Labels) != 3 || s.Labels[0].Key != wire.KeyVerifierError || !s.Labels[0].File {
		t.Fatalf("verifierSample(rejected) = %+v; want 1 op, 17000 clock units, the reason as a file label", s)
	}
	if s.Labels[1].Key != wire.KeyProgType || string(s.Labels[1].Value) != "xdp" || s.Labels[2].Key != wire.KeyAttachType || !s.Labels[2].File {
		t.Errorf("verifierSample(rejected) labels %+v; want the reason, then prog-type and attach-type xdp", s.Labels)
	}
	units := map[string]float64{}
	for _, m := range s.Extra {
		units[m.Unit] = m.Value
	}
	if units[wire.UnitVerdict] != wire.VerdictRejected || units[wire.UnitInsnsProcessed] != 2 || units[wire.UnitStackBytes] != 8 || units[wire.UnitProgInsns] != 4 {
		t.Errorf("verifierSample(rejected) extras = %v; want verifier-verdict %d, insns-processed 2, stack-bytes 8, prog-insns 4", units, wire.VerdictRejected)
	}
	for _, u := range []string{wire.UnitInsnsVerified, wire.UnitJitedBytes} {
		if _, ok := units[u]; ok {
			t.Errorf("verifierSample(rejected) has %s without bpf_prog_info", u)
		}
	}
	ok := verifierSample(verifierStats{Processed: 9, Usec: 1, Found: true}, loadFacts{Verified: 9, HasVerified: true, Jited: 64, HasJited: true}, "")
	got := map[string]float64{}
	for _, m := range ok.Extra {
		got[m.Unit] = m.Value
	}
	if got[wire.UnitVerdict] != wire.VerdictAccepted || got[wire.UnitJitedBytes] != 64 || got[wire.UnitInsnsVerified] != 9 {
		t.Errorf("verifierSample(accepted) extras = %v; want verdict %d, 64 jited bytes, 9 verified", got, wire.VerdictAccepted)
	}
	if _, ok := got[wire.UnitStackBytes]; ok {
		t.Errorf("verifierSample(accepted) has %s without a stack depth line", wire.UnitStackBytes)
	}
	if ok.Labels != nil {
		t.Errorf("verifierSample(accepted) labels = %v; want none (no reason, no type known)", ok.Labels)
	}
}

// TestVerifierRowsCoverEveryProgram checks that every program any
// benchmark loads has a Verifier row with the benchmark's requirements,
// and that benchmarks sharing a row load the same program: a new family
// that loads programs gets its rows by declaring Spec and Programs, and a
// family that forgets them fails here.
func TestVerifierRowsCoverEveryProgram(t *testing.T) {
	// Families whose benchmarks load no BPF program: only maps.
	noPrograms := []string{"MapBatch/"}
	all := Registry()
	rows := map[string]*Benchmark{}
	for _, b := range all {
		if strings.HasPrefix(b.Name, wire.VerifierPrefix) {
			if rows[b.Name] != nil {
				t.Errorf("two Verifier rows named %s", b.Name)
			}
			rows[b.Name] = b
		}
	}
	type first struct {
		bench, insns string
	}
	shared := map[string]first{}
	for _, b := range all {
		if strings.HasPrefix(b.Name, wire.VerifierPrefix) {
			continue
		}
		if b.Spec == nil {
			if !slices.ContainsFunc(noPrograms, func(f string) bool { return strings.HasPrefix(b.Name, f) }) {
				t.Errorf("%s has no Spec: every benchmark that loads programs declares them (Spec, Programs) for its Verifier rows", b.Name)
			}
			continue
		}
		spec, err := b.Spec(DefaultParams)
		if err != nil && b.Name == "LPMTrie/op=free" && (errors.Is(err, os.ErrNotExist) || errors.Is(err, btf.ErrNotSupported)) {
			// Its offsets come from the running kernel's BTF.
			spec, err = bpf.TrieFreeSpec(bpf.MapStructOffsets{Work: 8, MapType: 24, Name: 40})
		}
		if err != nil {
			t.Errorf("%s: Spec(DefaultParams): %v", b.Name, err)
			continue
		}
		var names []string
		for n := range spec.Programs {
			names = append(names, n)
		}
		slices.Sort(names)
		if got := slices.Sorted(slices.Values(b.Programs)); !slices.Equal(got, names) {
			t.Errorf("%s: Programs %v; its Spec loads %v", b.Name, got, names)
		}
		for _, prog := range names {
			name := verifierRowName(prog, b.Name)
			row := rows[name]
			if row == nil {
				t.Errorf("%s loads %s, which has no Verifier row %s", b.Name, prog, name)
				continue
			}
			for _, req := range b.Requires {
				if !slices.ContainsFunc(row.Requires, func(r Requirement) bool { return r.Feature == req.Feature }) {
					t.Errorf("%s lacks %s's requirement %s", name, b.Name, req.Feature)
				}
			}
			if !slices.Equal(row.Params, b.Params) {
				t.Errorf("%s has parameters %v; %s has %v", name, row.Params, b.Name, b.Params)
			}
			ps := spec.Programs[prog]
			insns := fmt.Sprintf("%v %v %s\n%v", ps.Type, ps.AttachType, ps.AttachTo, ps.Instructions)
			if f, ok := shared[name]; !ok {
				shared[name] = first{b.Name, insns}
			} else if f.insns != insns {
				t.Errorf("%s and %s share the row %s but load different programs %s (a part of their names that verifierSweepKeys drops shapes the program)", f.bench, b.Name, name, prog)
			}
		}
	}
	for name := range rows {
		if _, ok := shared[name]; !ok && name != wire.VerifierPrefix {
			t.Errorf("Verifier row %s verifies no benchmark's program", name)
		}
	}
	if len(rows) < 50 {
		t.Errorf("%d Verifier rows; want one per distinct program of every family", len(rows))
	}
}

func TestVerifierRowName(t *testing.T) {
	for _, c := range []struct{ prog, bench, want string }{
		{"lpm_noop", "LPMTrie/op=noop", "Verifier/prog=lpm_noop"},
		{"lpm_lookup", "LPMTrie/op=lookup/keys=random", "Verifier/prog=lpm_lookup/keys=random"},
		{"hash_update", "HashMap/map=lru_hash/op=update/key_size=64", "Verifier/prog=hash_update/map=lru_hash/key_size=64"},
		{"rb_producer", "RingBuf/api=output/mode=overwrite/producers=4", "Verifier/prog=rb_producer/api=output/mode=overwrite"},
		{"task_stg_get", "TaskStorage/prog=fentry/op=get", "Verifier/prog=task_stg_get/driver=fentry"},
		{"lpm_syscall", "LPMTrieSyscall/lookups=8/entries=8192", "Verifier/prog=lpm_syscall/lookups=8/entries=8192"},
	} {
		if got := verifierRowName(c.prog, c.bench); got != c.want {
			t.Errorf("verifierRowName(%q, %q) = %q; want %q", c.prog, c.bench, got, c.want)
		}
	}
}

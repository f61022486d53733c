package workloads

import (
	"strings"
	"testing"

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
	got := ParseVerifierStats(rejectedLog)
	want := VerifierStats{Processed: 2, HasMarkRead: true, Usec: 17, Found: true}
	if got != want {
		t.Errorf("ParseVerifierStats(6.1 log) = %+v; want %+v", got, want)
	}
	// 6.12 dropped mark_read.
	got = ParseVerifierStats([]string{"processed 25 insns (limit 1000000) max_states_per_insn 1 total_states 3 peak_states 3", "verification time 40 usec"})
	want = VerifierStats{Processed: 25, MaxStatesPerInsn: 1, TotalStates: 3, PeakStates: 3, Usec: 40, Found: true}
	if got != want {
		t.Errorf("ParseVerifierStats(6.12 log) = %+v; want %+v", got, want)
	}
	if got := ParseVerifierStats([]string{"0: R1=ctx()"}); got.Found {
		t.Errorf("ParseVerifierStats(no stats) = %+v; want not Found", got)
	}
}

func TestRejectionReason(t *testing.T) {
	got := RejectionReason(rejectedLog)
	want := "1: (71) r1 = *(u8 *)(r1 +20) | invalid access to packet, off=20 size=1, R1(id=0,off=20,r=0) | R1 offset is outside of the packet"
	if got != want {
		t.Errorf("RejectionReason() = %q; want %q", got, want)
	}
	long := RejectionReason([]string{strings.Repeat("é", wire.MaxVerifierErrorLen)})
	if len(long) > wire.MaxVerifierErrorLen || !strings.HasSuffix(long, "...") {
		t.Errorf("RejectionReason(long line) = %d bytes %q; want at most %d ending in ...", len(long), long, wire.MaxVerifierErrorLen)
	}
}

func TestVerifierSample(t *testing.T) {
	s := verifierSample(VerifierStats{Processed: 2, Usec: 17, Found: true}, 0, false, "R1 offset is outside of the packet")
	if s.Ops != 1 || s.Elapsed != 17000 || len(s.Labels) != 1 || s.Labels[0].Key != wire.KeyVerifierError || !s.Labels[0].File {
		t.Fatalf("verifierSample(rejected) = %+v; want 1 op, 17000 clock units, the reason as a file label", s)
	}
	units := map[string]float64{}
	for _, m := range s.Extra {
		units[m.Unit] = m.Value
	}
	if units[wire.UnitVerdict] != wire.VerdictRejected || units[wire.UnitInsnsProcessed] != 2 {
		t.Errorf("verifierSample(rejected) extras = %v; want verifier-verdict %d, insns-processed 2", units, wire.VerdictRejected)
	}
	if _, ok := units[wire.UnitInsnsVerified]; ok {
		t.Errorf("verifierSample(rejected) has %s without bpf_prog_info", wire.UnitInsnsVerified)
	}
	ok := verifierSample(VerifierStats{Processed: 9, Usec: 1, Found: true}, 9, true, "")
	for _, m := range ok.Extra {
		if m.Unit == wire.UnitVerdict && m.Value != wire.VerdictAccepted {
			t.Errorf("verifierSample(accepted) verdict %v; want %d", m.Value, wire.VerdictAccepted)
		}
	}
	if ok.Labels != nil {
		t.Errorf("verifierSample(accepted) labels = %v; want none", ok.Labels)
	}
}

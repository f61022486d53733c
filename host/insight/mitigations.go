package insight

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Mitigation code, named as such (docs/insight.md, "Mitigation code"):
// the x86 kernel's speculative-execution mitigations run as thunks that
// every return or indirect branch goes through, loops and barriers at
// kernel entry, and single instructions. This table is the one place
// that says which symbol is which (findCalls also skips the thunks by
// it, thunkOf); the exact profile counts each by its
// entries (executions of its first instruction: a return thunk is
// reached by `jmp`, a retpoline by `call`, both enter it once per use),
// and the mitigations' instructions by the plugin's count of them.

// MitigationKind is what a piece of mitigation code does per use.
type MitigationKind string

// The kinds, in the order reports list them.
const (
	// ReturnThunks replace every `ret` of the kernel (CONFIG_MITIGATION_RETHUNK,
	// apply_returns patches each `jmp __x86_return_thunk` at boot).
	ReturnThunks MitigationKind = "return thunks"
	// IndirectThunks replace indirect calls and jumps (retpolines, ITS).
	IndirectThunks MitigationKind = "indirect-branch thunks"
	// BHBClears are the branch history clearing loop (BHI, Linux 6.9).
	BHBClears MitigationKind = "BHB clears"
	// Untrains are the return-predictor untraining at kernel entry
	// (RETBleed, SRSO).
	Untrains MitigationKind = "return untrains"
	// IBPBs are indirect branch predictor barriers issued by the kernel.
	IBPBs MitigationKind = "IBPBs"
	// VERWs are the CPU buffer clears (MDS, TAA, MMIO, RFDS:
	// CLEAR_CPU_BUFFERS), a VERW instruction patched in at boot.
	VERWs MitigationKind = "VERWs"
)

// mitigationKinds are the kinds in report order.
var mitigationKinds = []MitigationKind{ReturnThunks, IndirectThunks, BHBClears, Untrains, IBPBs, VERWs}

// mitigationSymbol is one symbol (or, with prefix, a family of them) of
// mitigation code: what kind it is and which mitigation chooses it.
type mitigationSymbol struct {
	name       string
	prefix     bool
	kind       MitigationKind
	mitigation string
}

// mitigationSymbols are the kernel's mitigation code by symbol, from
// arch/x86/lib/retpoline.S, arch/x86/entry/entry.S and
// arch/x86/kernel/cpu/bugs.c (Linux 6.1 to 6.16). Helpers that a thunk
// calls once per use of its own (srso_safe_ret inside srso_return_thunk)
// are not listed: their entries would count each use twice.
var mitigationSymbols = []mitigationSymbol{
	{name: "__x86_return_thunk", kind: ReturnThunks, mitigation: "RETBleed (the default return thunk)"},
	{name: "retbleed_return_thunk", kind: ReturnThunks, mitigation: "RETBleed untrained return (AMD Zen 1/2)"},
	{name: "srso_return_thunk", kind: ReturnThunks, mitigation: "SRSO Safe RET (AMD Zen 1/2)"},
	{name: "srso_alias_return_thunk", kind: ReturnThunks, mitigation: "SRSO Safe RET, alias form (AMD Zen 3/4)"},
	{name: "its_return_thunk", kind: ReturnThunks, mitigation: "ITS aligned return thunk (Intel)"},
	{name: "call_depth_return_thunk", kind: ReturnThunks, mitigation: "RETBleed call depth tracking (Intel Skylake)"},
	{name: "__x86_indirect_thunk_", prefix: true, kind: IndirectThunks, mitigation: "Spectre v2 retpoline"},
	{name: "__x86_indirect_call_thunk_", prefix: true, kind: IndirectThunks, mitigation: "Spectre v2 retpoline with call depth tracking"},
	{name: "__x86_indirect_jump_thunk_", prefix: true, kind: IndirectThunks, mitigation: "Spectre v2 retpoline with call depth tracking"},
	{name: "__x86_indirect_its_thunk_", prefix: true, kind: IndirectThunks, mitigation: "ITS indirect thunk (Intel)"},
	{name: "clear_bhb_loop", kind: BHBClears, mitigation: "BHI: branch history clearing loop"},
	{name: "entry_untrain_ret", kind: Untrains, mitigation: "RETBleed/SRSO untraining at kernel entry"},
	{name: "retbleed_untrain_ret", kind: Untrains, mitigation: "RETBleed untraining (AMD)"},
	{name: "zen_untrain_ret", kind: Untrains, mitigation: "RETBleed untraining (AMD, before 6.6)"},
	{name: "srso_untrain_ret", kind: Untrains, mitigation: "SRSO untraining (AMD Zen 1/2)"},
	{name: "srso_alias_untrain_ret", kind: Untrains, mitigation: "SRSO untraining, alias form (AMD Zen 3/4)"},
	{name: "entry_ibpb", kind: IBPBs, mitigation: "IBPB at kernel entry (RETBleed/SRSO ibpb)"},
	{name: "write_ibpb", kind: IBPBs, mitigation: "IBPB (Linux 6.16)"},
}

// verwSpecial is the plugin's name of the VERW instruction count.
const verwSpecial = "verw"

// mitigationOf says what mitigation code the function fn is, false for
// code that is none.
func mitigationOf(fn string) (kind MitigationKind, mitigation string, ok bool) {
	for _, m := range mitigationSymbols {
		if fn == m.name || m.prefix && strings.HasPrefix(fn, m.name) {
			return m.kind, m.mitigation, true
		}
	}
	return "", "", false
}

// mitigationUse is one kind of mitigation code per operation, from an
// exact profile: the entries of its symbols (or the VERW instructions
// executed) over the operations.
type mitigationUse struct {
	Kind  MitigationKind `json:"kind"`
	PerOp float64        `json:"per_op"`
	// Symbols are the symbols entered, most entries first ("VERW" for
	// the instruction).
	Symbols []string `json:"symbols,omitempty"`
}

// mitigationUses sums the exact profile p's entries of mitigation code by
// kind, every kind present (0 when none ran).
func mitigationUses(p *Profile) []mitigationUse {
	if p == nil || !p.Exact || p.Ops == 0 {
		return nil
	}
	type sym struct {
		name    string
		entries uint64
	}
	byKind := map[MitigationKind][]sym{}
	for _, f := range p.Functions {
		if kind, _, ok := mitigationOf(f.Function); ok && f.Entries > 0 {
			byKind[kind] = append(byKind[kind], sym{f.Function, f.Entries})
		}
	}
	if n := p.Special[verwSpecial]; n > 0 {
		byKind[VERWs] = append(byKind[VERWs], sym{"VERW", n})
	}
	var out []mitigationUse
	for _, kind := range mitigationKinds {
		syms := byKind[kind]
		slices.SortFunc(syms, func(a, b sym) int { return cmp.Or(cmp.Compare(b.entries, a.entries), strings.Compare(a.name, b.name)) })
		u := mitigationUse{Kind: kind}
		var total uint64
		for _, s := range syms {
			total += s.entries
			u.Symbols = append(u.Symbols, s.name)
		}
		u.PerOp = float64(total) / float64(p.Ops)
		out = append(out, u)
	}
	return out
}

// MitigationRow is one kind of mitigation code per operation, A → B.
type MitigationRow struct {
	Kind MitigationKind `json:"kind"`
	A    float64        `json:"a"`
	B    float64        `json:"b"`
	// SymbolsA and SymbolsB are the symbols entered on each side.
	SymbolsA []string `json:"symbols_a,omitempty"`
	SymbolsB []string `json:"symbols_b,omitempty"`
}

// compareMitigations pairs the mitigation uses of two exact profiles,
// leaving out the kinds neither side ran; nil unless both are exact.
func compareMitigations(a, b *Profile) []MitigationRow {
	ua, ub := mitigationUses(a), mitigationUses(b)
	if ua == nil || ub == nil {
		return nil
	}
	rows := []MitigationRow{}
	for i, kind := range mitigationKinds {
		if ua[i].PerOp == 0 && ub[i].PerOp == 0 {
			continue
		}
		rows = append(rows, MitigationRow{Kind: kind, A: ua[i].PerOp, B: ub[i].PerOp, SymbolsA: ua[i].Symbols, SymbolsB: ub[i].Symbols})
	}
	return rows
}

// MitigationLine says a benchmark's mitigation code per operation, A →
// B, in one line: "2.02 return thunks per op → 0 (its_return_thunk → –)",
// leaving out the kinds below least per operation on both sides; with
// least 0 and no kind left, that neither side ran any. "" without two
// exact profiles, or when least left every kind out.
func (d *ProfileDiff) MitigationLine(least float64) string {
	if d == nil || d.Mitigations == nil {
		return ""
	}
	names := func(s []string) string {
		switch {
		case len(s) == 0:
			return "–"
		case len(s) > maxMitigationNames:
			return strings.Join(s[:maxMitigationNames], ", ") + ", …"
		}
		return strings.Join(s, ", ")
	}
	var parts []string
	for _, r := range d.Mitigations {
		if max(r.A, r.B) < least || max(r.A, r.B) == 0 {
			continue
		}
		who := names(r.SymbolsA)
		if b := names(r.SymbolsB); b != who {
			who += " → " + b
		}
		parts = append(parts, fmt.Sprintf("%s %s per op → %s (%s)", FormatPerOp(r.A), r.Kind, FormatPerOp(r.B), who))
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, "; ") + " (exact)"
	case least == 0:
		return "mitigation code per op: none ran on either side (exact)"
	}
	return ""
}

// maxMitigationNames bounds the symbols a mitigation line names per kind.
const maxMitigationNames = 2

// HeadlineMitigationMin is the least mitigation code per operation that
// a verdict's headline names (the why-block names all): indirect thunks
// entered by a timer interrupt every few hundred operations are not the
// operation's.
const HeadlineMitigationMin = 0.05

// FormatPerOp prints a count per operation: "0", two decimals, or two
// significant digits below 0.01 (an event every few hundred operations).
func FormatPerOp(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 0.01:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

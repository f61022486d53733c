package insight

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// DefaultProfilePeriod is the sample period of the profile pass, in ns of
// guest clock (instructions under icount): a prime, so that the samples do
// not fall in step with a loop of the benchmark, at 20 µs of guest clock,
// clear of the kernel's 10 µs floor for hrtimer events and of its
// throttling (perf_event_max_sample_rate, which the guest raises anyway).
const DefaultProfilePeriod = 20011

// Names the profile gives to addresses no symbol covers.
const (
	// userSpace is every sample taken in user space (the guest program).
	userSpace = "[user]"
	// moduleCode is an address in the module area that is not a BPF
	// program the benchmark loaded (the guest names only those).
	moduleCode = "[module]"
	// unknownCode is a kernel address no function symbol covers.
	unknownCode = "[unknown]"
)

// Profile is one benchmark's profile on one kernel: where the samples
// of its operations fell, by function (self), and by caller → callee; or,
// Exact, where every instruction of them went (exactProfile).
type Profile struct {
	Benchmark string `json:"benchmark"`
	// Exact says the plugin counted every instruction and call of the
	// operations (Event EventExact): Insns, Functions' Insns and Entries
	// and Edges' Calls are counts, not samples.
	Exact bool `json:"exact,omitempty"`
	// Event, Weight and Period are the guest's (wire.ProfileDoc).
	Event  string `json:"event"`
	Weight string `json:"weight"`
	Period uint64 `json:"period"`
	// Samples taken, Lost to the kernel's throttling, Dropped for want of
	// room in the guest's map.
	Samples uint64 `json:"samples"`
	Lost    uint64 `json:"lost"`
	Dropped uint64 `json:"dropped,omitempty"`
	Ops     uint64 `json:"ops"`
	Unit    string `json:"unit,omitempty"`
	// PerOp is the event's count per operation during the pass (the
	// thread's guest clock, sampling overhead included).
	PerOp     float64         `json:"per_op"`
	Functions []FunctionShare `json:"functions"`
	Edges     []CallEdge      `json:"edges,omitempty"`
	// Insns are the instructions an exact profile counted in all;
	// Special the mitigations' instructions it counted by name ("verw",
	// "lfence", "wrmsr"), Flow its control transfers by kind.
	Insns   uint64               `json:"insns,omitempty"`
	Special map[string]uint64    `json:"special,omitempty"`
	Flow    *vmrunner.FlowCounts `json:"flow,omitempty"`
	// Unreliable says why a sampled profile's shares are not the
	// operation's: it lost more than maxLostShare of its samples.
	Unreliable string `json:"unreliable,omitempty"`
	Problem    string `json:"problem,omitempty"`
}

// maxLostShare is the largest share of a sampled profile's due samples
// that may be lost before the profile says it is unreliable: the samples
// lost are those of code run with interrupts off or throttled, not a
// random few, so beyond a few percent the shares describe what the
// samples saw, not the operation.
const maxLostShare = 0.03

// unreliable says why a sampled profile's shares cannot be read as the
// operation's ("" when they can): it lost more than maxLostShare of the
// samples due.
func (p *Profile) unreliable() string {
	if p == nil || p.Exact || p.Lost == 0 {
		return ""
	}
	due := p.Samples + p.Lost
	if float64(p.Lost) <= maxLostShare*float64(due) {
		return ""
	}
	return fmt.Sprintf("unreliable: %d of %d samples due were lost (%.1f%%; a kernel without high-resolution timers, or throttling): the shares are of the %d taken", p.Lost, due, 100*float64(p.Lost)/float64(due), p.Samples)
}

// FunctionShare is the samples that fell in one function (self), or in
// an exact profile its instructions and entries.
type FunctionShare struct {
	Function string `json:"function"`
	Samples  uint64 `json:"samples"`
	// Insns are the instructions executed in the function, Entries the
	// executions of its first instruction (exact profiles only).
	Insns   uint64  `json:"insns,omitempty"`
	Entries uint64  `json:"entries,omitempty"`
	Share   float64 `json:"share"` // of the profile's stored samples (or instructions), 0 to 1
}

// CallEdge is the samples that fell in Callee while it was called from
// Caller (the first return address of the kernel stack); in an exact
// profile, the calls from Caller's call instructions to Callee.
type CallEdge struct {
	Caller  string  `json:"caller"`
	Callee  string  `json:"callee"`
	Samples uint64  `json:"samples"`
	Calls   uint64  `json:"calls,omitempty"`
	Share   float64 `json:"share"`
}

// ProfileSummary is what one side's profile pass said as a whole.
type ProfileSummary struct {
	Event  string `json:"event"`
	Weight string `json:"weight"`
	Period uint64 `json:"period"`
	// Cost is the guest clock the pass took, in Weight's units.
	Cost   uint64 `json:"cost"`
	Limits string `json:"limits,omitempty"`
	// Problem says why there is no profile ("" when there is).
	Problem string `json:"problem,omitempty"`
	// Exact is how many benchmarks the memory plugin profiled exactly in
	// place of the sampling pass, ExactCost the memory pass's guest
	// clock, which they came with.
	Exact     int    `json:"exact,omitempty"`
	ExactCost uint64 `json:"exact_cost,omitempty"`
	// ExactProblem says why the plugin profiled nothing although it
	// counted (a plugin built before the exact profile).
	ExactProblem string `json:"exact_problem,omitempty"`
}

// AddProfile symbolizes a guest's profile with the side's symbols (a
// side without symbols says why it has no profile).
func (s *Side) AddProfile(doc *wire.ProfileDoc) {
	if doc == nil {
		return
	}
	if s.Symbols == nil {
		s.ProfileSummary = &ProfileSummary{Event: doc.Event, Weight: doc.Weight, Period: doc.Period, Cost: doc.Cost, Limits: doc.Limits, Problem: "no symbols to name the samples with"}
		return
	}
	s.ProfileSummary, s.Profiles = symbolizeProfile(doc, s.Symbols)
}

// symbolizeProfile names the sites of a guest's profile with syms, whose
// addresses are link-time: the KASLR offset is the guest's _text minus
// syms' _text.
func symbolizeProfile(doc *wire.ProfileDoc, syms *Symbols) (*ProfileSummary, []Profile) {
	sum := &ProfileSummary{Event: doc.Event, Weight: doc.Weight, Period: doc.Period, Cost: doc.Cost, Limits: doc.Limits, Problem: doc.Problem}
	offset, ok := kaslrOffset(syms, doc.Text)
	if !ok && sum.Problem == "" {
		sum.Problem = noTextProblem
		return sum, nil
	}
	var out []Profile
	for _, b := range doc.Benchmarks {
		out = append(out, symbolizeBench(b, doc, syms, offset))
	}
	return sum, out
}

// noTextProblem says why a guest's addresses cannot be named.
const noTextProblem = "no _text in the symbols: kernel addresses cannot be placed (KASLR)"

// kaslrOffset is the KASLR offset of a guest whose _text was at text:
// text less syms' _text; false when syms has none below it.
func kaslrOffset(syms *Symbols, text uint64) (uint64, bool) {
	if t := syms.Lookup("_text"); len(t) > 0 && text >= t[0].Addr {
		return text - t[0].Addr, true
	}
	return 0, false
}

// addressNamer names the run-time addresses of a guest: user space, the
// extra symbols (BPF programs), the module area, else the function of
// syms at the address less the KASLR offset.
func addressNamer(syms *Symbols, offset uint64, extra []wire.ProfileSymbol) func(uint64) string {
	locate := addressLocator(syms, offset, extra)
	return func(addr uint64) string {
		name, _ := locate(addr)
		return name
	}
}

// addressLocator is addressNamer that also says whether the address is
// the first of its function (of a symbol, or of a BPF program's image).
func addressLocator(syms *Symbols, offset uint64, extra []wire.ProfileSymbol) func(uint64) (string, bool) {
	return func(addr uint64) (string, bool) {
		switch {
		case addr == 0 || wire.IsUser(addr):
			return userSpace, false
		}
		for _, s := range extra {
			if addr >= s.Addr && addr < s.Addr+s.Size {
				return s.Name, addr == s.Addr
			}
		}
		if wire.IsModuleArea(addr) {
			return moduleCode, false
		}
		if s, ok := syms.At(addr - offset); ok && s.IsFunc() {
			return s.Name, s.Addr == addr-offset
		}
		return unknownCode, false
	}
}

func symbolizeBench(b wire.BenchProfile, doc *wire.ProfileDoc, syms *Symbols, offset uint64) Profile {
	p := Profile{Benchmark: b.Benchmark, Event: doc.Event, Weight: doc.Weight, Period: doc.Period,
		Samples: b.Samples, Lost: b.Lost, Dropped: b.Dropped, Ops: b.Ops, Unit: b.Unit, Problem: b.Problem,
		Functions: []FunctionShare{}}
	if b.Ops > 0 {
		p.PerOp = float64(b.Count) / float64(b.Ops)
	}
	p.Unreliable = p.unreliable()
	name := addressNamer(syms, offset, b.Symbols)
	self := map[string]uint64{}
	type edge struct{ caller, callee string }
	edges := map[edge]uint64{}
	var total uint64
	for _, s := range b.Sites {
		fn := name(s.IP)
		self[fn] += s.Samples
		total += s.Samples
		if s.Caller != 0 && fn != userSpace {
			edges[edge{name(s.Caller), fn}] += s.Samples
		}
	}
	if total == 0 {
		return p
	}
	for fn, n := range self {
		p.Functions = append(p.Functions, FunctionShare{Function: fn, Samples: n, Share: float64(n) / float64(total)})
	}
	slices.SortFunc(p.Functions, func(a, b FunctionShare) int {
		return cmp.Or(cmp.Compare(b.Samples, a.Samples), strings.Compare(a.Function, b.Function))
	})
	for e, n := range edges {
		p.Edges = append(p.Edges, CallEdge{Caller: e.caller, Callee: e.callee, Samples: n, Share: float64(n) / float64(total)})
	}
	slices.SortFunc(p.Edges, func(a, b CallEdge) int {
		return cmp.Or(cmp.Compare(b.Samples, a.Samples), strings.Compare(a.Caller, b.Caller), strings.Compare(a.Callee, b.Callee))
	})
	p.Edges = p.Edges[:min(len(p.Edges), maxEdges)]
	return p
}

// maxEdges bounds the caller → callee pairs kept per profile.
const maxEdges = 64

// Share returns the share of function fn, 0 when no sample fell there.
func (p *Profile) Share(fn string) float64 {
	if p == nil {
		return 0
	}
	for _, f := range p.Functions {
		if f.Function == fn {
			return f.Share
		}
	}
	return 0
}

// ProfileDiff compares one benchmark's profiles.
type ProfileDiff struct {
	Benchmark string   `json:"benchmark"`
	A         *Profile `json:"a"`
	B         *Profile `json:"b"`
	// PerOpA and PerOpB are the instructions (or the event's units) per
	// operation the rows attribute by share; PerOpSource says whose:
	// "timed" (the verdict's centres, AttributeTimed) or "profile" (the
	// pass's own clock per operation, which includes its sampling).
	PerOpA      float64 `json:"per_op_a"`
	PerOpB      float64 `json:"per_op_b"`
	PerOpSource string  `json:"per_op_source"`
	PerOpUnit   string  `json:"per_op_unit,omitempty"`
	// Rows are the functions whose attributed share of an operation
	// changed most, largest change first.
	Rows []ProfileRow `json:"rows"`
	// Edges are the caller → callee pairs whose share (exact: calls per
	// operation) changed most.
	Edges []EdgeRow `json:"edges,omitempty"`
	// Mitigations are the mitigation code per operation, A → B, when both
	// profiles are exact (nil otherwise; empty when neither side ran any).
	Mitigations []MitigationRow `json:"mitigations,omitempty"`
}

// Exact says both sides' profiles are exact.
func (d *ProfileDiff) Exact() bool { return d.A != nil && d.B != nil && d.A.Exact && d.B.Exact }

// ProfileRow is one function in A and B.
type ProfileRow struct {
	Function string  `json:"function"`
	ShareA   float64 `json:"share_a"`
	ShareB   float64 `json:"share_b"`
	// DeltaPP is ShareB − ShareA in percentage points.
	DeltaPP float64 `json:"delta_pp"`
	// PerOpA and PerOpB are the share times the side's PerOp.
	PerOpA float64 `json:"per_op_a"`
	PerOpB float64 `json:"per_op_b"`
	// EntriesA and EntriesB are the function's entries per operation
	// (exact profiles only).
	EntriesA float64 `json:"entries_a,omitempty"`
	EntriesB float64 `json:"entries_b,omitempty"`
}

// EdgeRow is one caller → callee pair in A and B.
type EdgeRow struct {
	Caller string  `json:"caller"`
	Callee string  `json:"callee"`
	ShareA float64 `json:"share_a"`
	ShareB float64 `json:"share_b"`
	// CallsA and CallsB are the calls per operation (exact profiles only).
	CallsA float64 `json:"calls_a,omitempty"`
	CallsB float64 `json:"calls_b,omitempty"`
}

// Profile diff sizes.
const (
	maxProfileRows = 10
	maxEdgeRows    = 5
	// minRowShare leaves out functions under this share on both sides,
	// unless, in an exact profile, they are entered at least
	// minRowEntries times per operation (a return thunk: few
	// instructions, entered at every return).
	minRowShare   = 0.002
	minRowEntries = 0.5
)

// entriesPerOp is function fn's entries per operation in an exact
// profile, 0 otherwise.
func (p *Profile) entriesPerOp(fn string) float64 {
	if p == nil || !p.Exact || p.Ops == 0 {
		return 0
	}
	for _, f := range p.Functions {
		if f.Function == fn {
			return float64(f.Entries) / float64(p.Ops)
		}
	}
	return 0
}

// compareProfiles pairs the profiles of a and b by benchmark.
func compareProfiles(a, b []Profile) []ProfileDiff {
	p := pairUp(a, b, func(pr Profile) string { return pr.Benchmark })
	var out []ProfileDiff
	for _, k := range p.keys {
		d := ProfileDiff{Benchmark: k, PerOpSource: "profile"}
		if l := p.a[k]; len(l) > 0 {
			d.A = &l[len(l)-1]
			d.PerOpA = d.A.PerOp
		}
		if l := p.b[k]; len(l) > 0 {
			d.B = &l[len(l)-1]
			d.PerOpB = d.B.PerOp
		}
		if d.Exact() {
			d.PerOpSource = EventExact
			d.Mitigations = compareMitigations(d.A, d.B)
		}
		d.rank()
		out = append(out, d)
	}
	return out
}

// rank (re)computes the rows from the profiles and PerOpA/B.
func (d *ProfileDiff) rank() {
	d.Rows, d.Edges = []ProfileRow{}, nil
	seen := map[string]bool{}
	for _, pr := range []*Profile{d.A, d.B} {
		if pr == nil {
			continue
		}
		for _, f := range pr.Functions {
			if seen[f.Function] {
				continue
			}
			seen[f.Function] = true
			r := ProfileRow{Function: f.Function, ShareA: d.A.Share(f.Function), ShareB: d.B.Share(f.Function)}
			r.EntriesA, r.EntriesB = d.A.entriesPerOp(f.Function), d.B.entriesPerOp(f.Function)
			if max(r.ShareA, r.ShareB) < minRowShare && !(d.Exact() && max(r.EntriesA, r.EntriesB) >= minRowEntries) {
				continue
			}
			r.DeltaPP = 100 * (r.ShareB - r.ShareA)
			r.PerOpA, r.PerOpB = r.ShareA*d.PerOpA, r.ShareB*d.PerOpB
			d.Rows = append(d.Rows, r)
		}
	}
	slices.SortStableFunc(d.Rows, func(x, y ProfileRow) int {
		return cmp.Or(cmp.Compare(math.Abs(y.PerOpB-y.PerOpA), math.Abs(x.PerOpB-x.PerOpA)), cmp.Compare(math.Abs(y.DeltaPP), math.Abs(x.DeltaPP)),
			cmp.Compare(math.Abs(y.EntriesB-y.EntriesA), math.Abs(x.EntriesB-x.EntriesA)))
	})
	d.Rows = d.Rows[:min(len(d.Rows), maxProfileRows)]
	type key struct{ caller, callee string }
	shares := map[key]*EdgeRow{}
	var keys []key
	for i, pr := range []*Profile{d.A, d.B} {
		if pr == nil {
			continue
		}
		for _, e := range pr.Edges {
			k := key{e.Caller, e.Callee}
			if shares[k] == nil {
				shares[k] = &EdgeRow{Caller: e.Caller, Callee: e.Callee}
				keys = append(keys, k)
			}
			calls := 0.0
			if pr.Exact && pr.Ops > 0 {
				calls = float64(e.Calls) / float64(pr.Ops)
			}
			if i == 0 {
				shares[k].ShareA, shares[k].CallsA = e.Share, calls
			} else {
				shares[k].ShareB, shares[k].CallsB = e.Share, calls
			}
		}
	}
	for _, k := range keys {
		if e := shares[k]; max(e.ShareA, e.ShareB) >= minRowShare || d.Exact() && max(e.CallsA, e.CallsB) >= minRowEntries {
			d.Edges = append(d.Edges, *e)
		}
	}
	slices.SortStableFunc(d.Edges, func(x, y EdgeRow) int {
		return cmp.Or(cmp.Compare(math.Abs(y.CallsB-y.CallsA), math.Abs(x.CallsB-x.CallsA)), cmp.Compare(math.Abs(y.ShareB-y.ShareA), math.Abs(x.ShareB-x.ShareA)))
	})
	d.Edges = d.Edges[:min(len(d.Edges), maxEdgeRows)]
}

// AttributeTimed sets the instructions per operation the profile rows
// attribute by share to the verdict's: perOp returns the centre of a
// benchmark's timed samples on side 0 (A) or 1 (B), and its unit, false
// when it has none. Shares then split the timed cost, which the pass's
// own clock overstates by its sampling.
func (d *Diff) AttributeTimed(perOp func(bench string, side int) (float64, string, bool)) {
	if d == nil {
		return
	}
	for i := range d.Profiles {
		p := &d.Profiles[i]
		if p.Exact() {
			continue // counted, not split: the plugin's own instructions per operation
		}
		a, unit, okA := perOp(p.Benchmark, 0)
		b, _, okB := perOp(p.Benchmark, 1)
		if !okA || !okB {
			continue
		}
		p.PerOpA, p.PerOpB, p.PerOpSource, p.PerOpUnit = a, b, "timed", unit
		p.rank()
	}
}

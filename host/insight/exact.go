package insight

import (
	"cmp"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// The exact profile (docs/insight.md, "Exact profile"): in the memory
// pass the plugin counts, inside each benchmark's marked windows, the
// executions of every instruction by address and the calls by call site
// and target. The host names them with the side's symbols: a function's
// instructions are those of its addresses, its entries the executions of
// its first instruction (a call, a tail call or a jump to it: what a
// kprobe at its entry counts), and a call edge is named by the functions
// of its site and target. Nothing comes from the guest's configuration:
// no perf event, no timer, no sampling.

// EventExact is the Event of an exact profile.
const EventExact = "exact"

// exactProfile builds one benchmark's exact profile from its segment; ok
// is false when the plugin did not count one (an older plugin).
func exactProfile(b wire.BenchMemory, seg *vmrunner.MemSegment, locate func(uint64) (string, bool)) (Profile, bool) {
	if seg.Flow == nil {
		return Profile{}, false
	}
	p := Profile{Benchmark: b.Benchmark, Event: EventExact, Weight: "instructions", Exact: true, Ops: b.Ops, Unit: b.Unit,
		Functions: []FunctionShare{}, Special: seg.Special, Flow: seg.Flow}
	type fn struct{ insns, entries uint64 }
	fns := map[string]*fn{}
	get := func(name string) *fn {
		f := fns[name]
		if f == nil {
			f = &fn{}
			fns[name] = f
		}
		return f
	}
	var total uint64
	for _, e := range seg.Execs {
		total += e.Count
		if e.PC == vmrunner.PCOverflow {
			get(notAttributed).insns += e.Count
			continue
		}
		name, entry := locate(e.PC)
		f := get(name)
		f.insns += e.Count
		if entry {
			f.entries += e.Count
		}
	}
	p.Insns = total
	if b.Ops > 0 {
		p.PerOp = float64(total) / float64(b.Ops)
	}
	for name, f := range fns {
		share := 0.0
		if total > 0 {
			share = float64(f.insns) / float64(total)
		}
		p.Functions = append(p.Functions, FunctionShare{Function: name, Insns: f.insns, Entries: f.entries, Share: share})
	}
	slices.SortFunc(p.Functions, func(a, b FunctionShare) int {
		return cmp.Or(cmp.Compare(b.Insns, a.Insns), strings.Compare(a.Function, b.Function))
	})
	type edge struct{ caller, callee string }
	edges := map[edge]uint64{}
	var calls uint64
	for _, c := range seg.Calls {
		calls += c.Count
		e := edge{notAttributed, notAttributed}
		if c.Site != vmrunner.PCOverflow {
			e.caller, _ = locate(c.Site)
			e.callee, _ = locate(c.Target)
		}
		edges[e] += c.Count
	}
	for e, n := range edges {
		share := float64(n) / float64(calls)
		p.Edges = append(p.Edges, CallEdge{Caller: e.caller, Callee: e.callee, Calls: n, Share: share})
	}
	slices.SortFunc(p.Edges, func(a, b CallEdge) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), strings.Compare(a.Caller, b.Caller), strings.Compare(a.Callee, b.Callee))
	})
	p.Edges = p.Edges[:min(len(p.Edges), maxEdges)]
	return p, true
}

// notAttributed names the instructions and calls the plugin had no room
// to tell apart.
const notAttributed = "[not attributed: the plugin's table was full]"

// setExactProfiles puts the exact profiles in place of the sampled ones
// of the same benchmarks (the guest samples only the others when the
// plugin counts), and says so in the side's profile summary.
func (s *Side) setExactProfiles(exact []Profile, cost uint64) {
	if len(exact) == 0 {
		return
	}
	for _, e := range exact {
		if i := slices.IndexFunc(s.Profiles, func(p Profile) bool { return p.Benchmark == e.Benchmark }); i >= 0 {
			s.Profiles[i] = e
		} else {
			s.Profiles = append(s.Profiles, e)
		}
	}
	if s.ProfileSummary == nil {
		s.ProfileSummary = &ProfileSummary{}
	}
	s.ProfileSummary.Exact, s.ProfileSummary.ExactCost = len(exact), cost
}

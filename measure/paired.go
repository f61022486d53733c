package measure

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/lpmbisect/lpmbisect/vmrunner"
)

// runPaired runs the two sides in pairs. Each round boots A and B at the same
// time, both pinned to one host CPU, with paced guests: each guest stops
// before every step of its run plan (the start of a benchmark, each further
// sample, the end), and the host lets the two take each step in turn, in an
// order drawn per step from Seed. Only one guest computes at any moment, and
// sample k of A and sample k of B are taken within a step of each other on
// the same CPU.
//
// Why: on a shared host the speed of a CPU wanders by ±10 % and more over
// seconds (other tenants on the same physical core and cache), far more than
// the changes worth finding, and boots run one after the other land in
// different host states. Host state that lasts longer than a step hits both
// VMs of a pair alike and cancels in the ratio B/A of the pair, which
// package compare then tests (Wilcoxon signed-rank over pairs).
//
// A round whose A or B boot fails leaves an incomplete pair; the boot that
// worked is still written (labelled with its pair) and the round is
// repeated. Boots and MaxBoots count complete pairs.
func runPaired(ctx context.Context, p Plan) (*Summary, error) {
	st := newRunState()
	sum := st.sum
	sum.PinnedCPU = -1
	if cpu, err := vmrunner.PairCPU(); err == nil {
		p.VM.PinCPUs = []int{cpu}
		sum.PinnedCPU = cpu
	}
	target := p.Boots
	st.total = 2 * target
	pairs := 0
	for round := 1; ; round++ {
		if pairs >= target {
			if target >= p.MaxBoots || p.More == nil || !p.More() {
				break
			}
			target++
			st.total = 2 * target
		}
		if err := ctx.Err(); err != nil {
			return sum, context.Cause(ctx)
		}
		var (
			boots   [2]int
			cfgs    [2]vmrunner.Config
			results [2]*vmrunner.Result
			errs    [2]error
			wg      sync.WaitGroup
		)
		events := make(chan paceEvent, 8)
		for i, s := range p.Sides {
			boots[i] = st.nextBoot(s)
			if p.OnBootStart != nil {
				p.OnBootStart(s, boots[i], st.done, st.total)
			}
			cfgs[i] = bootConfig(p, s, boots[i])
			cfgs[i].Pace = func(step int, resume func()) { events <- paceEvent{side: i, resume: resume} }
		}
		// Which QEMU starts first is drawn too: the first to boot waits
		// longer for its partner, and nothing may favour one side.
		turns := rand.New(rand.NewPCG(p.Seed, uint64(round)))
		starts := []int{0, 1}
		if turns.IntN(2) == 1 {
			starts = []int{1, 0}
		}
		for _, i := range starts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = p.Boot(ctx, cfgs[i])
				events <- paceEvent{side: i, done: true}
			}()
		}
		sum.Steps += takeTurns(events, turns)
		wg.Wait()
		for i := range p.Sides {
			if errs[i] != nil {
				return sum, errs[i]
			}
		}
		var recErr error
		for i, s := range p.Sides {
			if err := st.record(ctx, p, s, boots[i], round, cfgs[i], results[i]); err != nil && recErr == nil {
				recErr = err
			}
		}
		if recErr != nil {
			return sum, recErr
		}
		if results[0].Outcome == vmrunner.OK && results[1].Outcome == vmrunner.OK {
			pairs++
		}
	}
	sum.Pairs = pairs
	return sum, nil
}

// paceEvent is a guest of a pair that waits for its next step (resume lets
// it go), or whose boot ended (done).
type paceEvent struct {
	side   int
	resume func()
	done   bool
}

// takeTurns lets the two guests of a pair take their steps in turn until
// both boots have ended: when both wait, it draws which goes first, resumes
// it, waits until it waits again (or ends), then resumes the other. A guest
// whose partner has ended goes on alone. It returns the number of steps it
// let the guests take.
func takeTurns(events <-chan paceEvent, order *rand.Rand) int {
	steps := 0
	var waiting [2]func()
	alive := [2]bool{true, true}
	running := -1 // the side taking a step
	var next []int
	for alive[0] || alive[1] {
		e := <-events
		if e.done {
			alive[e.side], waiting[e.side] = false, nil
		} else {
			waiting[e.side] = e.resume
		}
		if running == e.side {
			running = -1
		}
		if running >= 0 {
			continue
		}
		if len(next) == 0 {
			switch {
			case alive[0] && alive[1]:
				if waiting[0] != nil && waiting[1] != nil {
					next = []int{0, 1}
					if order.IntN(2) == 1 {
						next = []int{1, 0}
					}
				}
			case alive[0] && waiting[0] != nil:
				next = []int{0}
			case alive[1] && waiting[1] != nil:
				next = []int{1}
			}
		}
		for len(next) > 0 && running < 0 {
			s := next[0]
			next = next[1:]
			if resume := waiting[s]; resume != nil {
				waiting[s], running = nil, s
				steps++
				resume()
			}
		}
	}
	return steps
}

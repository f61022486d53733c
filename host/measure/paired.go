package measure

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
)

// Paired is the executor of paired runs: it boots the two jobs of each
// round (a pair) at the same time, both pinned to one host CPU, with paced
// guests: each guest stops before every step of its run plan (the start of
// a benchmark, each further sample, the end), and the executor lets the two
// take each step in turn, in an order drawn per step from Seed and the
// round. Only one guest computes at any moment, and sample k of A and
// sample k of B are taken within a step of each other on the same CPU.
//
// Why: on a shared host the speed of a CPU wanders by ±10 % and more over
// seconds (other tenants on the same physical core and cache), far more
// than the changes worth finding, and boots run one after the other land in
// different host states. Host state that lasts longer than a step hits both
// VMs of a pair alike and cancels in the ratio B/A of the pair, which
// package compare then tests (Wilcoxon signed-rank over pairs).
//
// A round whose A or B boot fails leaves an incomplete pair; the boot that
// worked is still kept (labelled with its pair) and the Runner repeats the
// round.
type Paired struct {
	Boot BootFunc
	Seed uint64

	mu     sync.Mutex
	pinned bool
	cpu    int
	steps  int
}

// Steps returns the steps the guests took in turn so far.
func (p *Paired) Steps() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.steps
}

// PinnedCPU returns the host CPU the pairs run on, -1 when they could not be
// pinned (or before the first pair).
func (p *Paired) PinnedCPU() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.pinned {
		return -1
	}
	return p.cpu
}

// Run implements Executor. jobs come in pairs (A and B of one round, with
// Job.Pair set); done is called for both after both boots ended.
func (p *Paired) Run(ctx context.Context, jobs []Job, done func(Job, *vmrunner.Result) error) error {
	if len(jobs)%2 != 0 {
		return fmt.Errorf("measure: paired executor given %d boots, not pairs", len(jobs))
	}
	p.mu.Lock()
	if !p.pinned {
		if cpu, err := vmrunner.PairCPU(); err == nil {
			p.pinned, p.cpu = true, cpu
		}
	}
	p.mu.Unlock()
	for i := 0; i < len(jobs); i += 2 {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if err := p.runPair(ctx, jobs[i:i+2], done); err != nil {
			return err
		}
	}
	return nil
}

func (p *Paired) runPair(ctx context.Context, pair []Job, done func(Job, *vmrunner.Result) error) error {
	var (
		results [2]*vmrunner.Result
		errs    [2]error
		wg      sync.WaitGroup
	)
	events := make(chan paceEvent, 8)
	for i := range pair {
		cfg := &pair[i].Config
		if p.pinned {
			cfg.PinCPUs = []int{p.cpu}
		}
		cfg.Pace = func(step int, resume func()) { events <- paceEvent{side: i, resume: resume} }
		pair[i].Start()
	}
	// Which QEMU starts first is drawn too: the first to boot waits
	// longer for its partner, and nothing may favour one side.
	turns := rand.New(rand.NewPCG(p.Seed, uint64(pair[0].Pair)))
	starts := []int{0, 1}
	if turns.IntN(2) == 1 {
		starts = []int{1, 0}
	}
	for _, i := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = p.Boot(ctx, pair[i].Config)
			events <- paceEvent{side: i, done: true}
		}()
	}
	steps := takeTurns(events, turns)
	wg.Wait()
	p.mu.Lock()
	p.steps += steps
	p.mu.Unlock()
	for i := range pair {
		if errs[i] != nil {
			return errs[i]
		}
	}
	var first error
	for i, j := range pair {
		if err := done(j, results[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
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

package measure

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Job is one boot for an Executor to run.
type Job struct {
	Side   *Side
	Boot   int // number within the side, from 1, failed boots included
	Pair   int // round of a paired run; 0 when unpaired
	Config vmrunner.Config

	starting func() // tells the Runner the boot starts (progress)
}

// Start tells whoever made the job that its boot starts: the Runner then
// reports it and, until the boot ends, does not take a failed boot of the
// same side for the kernel's. Every executor calls it once per job, when
// the boot starts (for a boot on another host: when it is first seen
// running there); an executor that cannot tell may skip it.
func (j Job) Start() {
	if j.starting != nil {
		j.starting()
	}
}

// BootFunc boots one VM: the setup's boot under its decided accelerator, or a fake in tests.
type BootFunc func(context.Context, vmrunner.Config) (*vmrunner.Result, error)

// Executor runs boots: it is the policy of how a Runner's boots run (one
// after the other, several at once, in pairs, as jobs on other hosts), so
// the Runner and the adaptive comparison above it have one loop whatever
// the policy.
type Executor interface {
	// Run boots jobs, in their order as far as the policy allows, and
	// calls done for each boot that ended, never two at once. When done
	// returns an error, Run cancels the boots still running, does not call
	// done for them, and returns that error. An error from booting itself
	// (QEMU missing) ends the run the same way.
	Run(ctx context.Context, jobs []Job, done func(Job, *vmrunner.Result) error) error
}

// Local boots on this host, Workers at a time (1 when zero): one after the
// other for wall-clock accelerators, several at once under icount (see
// Workers).
type Local struct {
	Boot    BootFunc
	Workers int
}

// Run implements Executor.
func (l Local) Run(ctx context.Context, jobs []Job, done func(Job, *vmrunner.Result) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workers := max(1, l.Workers)
	slots := make(chan struct{}, workers)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	for _, j := range jobs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || stopped() {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			j.Start()
			res, err := l.Boot(ctx, j.Config)
			mu.Lock()
			defer mu.Unlock()
			if first != nil {
				return // stopped: a sibling's failure is what is reported
			}
			if err == nil {
				err = done(j, res)
			}
			if err != nil {
				first = err
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return nil
}

// ErrParallelWallClock is returned by Workers when more than one boot at a
// time is asked for under a wall-clock accelerator.
var ErrParallelWallClock = errors.New("wall-clock boots must not overlap")

// workers is the one rule of how many boots may run at once: under icount
// as many as asked, or one per host CPU when asked for 0, because
// instruction counts do not change when VMs share the host (two parallel
// icount boots print the same counts to the last digit); under wall-clock
// accelerators (tcg, kvm, auto) one, because VMs sharing the host slow each
// other down. Asking for more than one there is an error wrapping
// ErrParallelWallClock.
func workers(accel wire.Accel, requested int) (int, error) {
	switch {
	case requested < 0:
		return 0, fmt.Errorf("%d boots at once: must not be negative", requested)
	case accel == wire.AccelIcount && requested == 0:
		return runtime.NumCPU(), nil
	case accel == wire.AccelIcount:
		return requested, nil
	case requested > 1:
		return 0, fmt.Errorf("%d boots at once under %s: %w (only icount boots may run in parallel)", requested, accel, ErrParallelWallClock)
	}
	return 1, nil
}

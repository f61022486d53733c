package fleet

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

// buildQueue is the name of the queue of build jobs, and the prefix of
// more of them ("build-big").
const buildQueue = "build"

// Queue is a parsed queue name. A queue names the host class that works
// it: the part before the first '-' is the accelerator its boots run
// under ("icount", "tcg", "kvm-zen4", "kvm-skylake") or "build" for
// kernel builds ("build", "build-big"); what follows the '-' is the
// operator's name for the hosts' class and means nothing to lpmbisect.
type Queue struct {
	Name string
	// Accel is the accelerator of a boot queue; "" for a build queue.
	Accel wire.Accel
}

// Build reports whether q is a queue of build jobs.
func (q Queue) Build() bool { return q.Accel == "" }

// WallClock reports whether the boots of q measure wall-clock time: such
// boots must not overlap on a host, and A and B of a comparison must run
// on one host.
func (q Queue) WallClock() bool { return q.Accel == wire.AccelTCG || q.Accel == wire.AccelKVM }

// ErrQueueName is wrapped by parseQueue's errors.
var ErrQueueName = errors.New("not a queue name")

// River's rule for queue names (letters and digits, words joined by '_'
// or '-', at most 64 bytes).
var queueName = regexp.MustCompile(`^[a-z0-9]+(?:[_-][a-z0-9]+)*$`)

// parseQueue parses a queue name (see Queue).
func parseQueue(name string) (Queue, error) {
	if len(name) > 64 || !queueName.MatchString(name) {
		return Queue{}, fmt.Errorf("queue %q: %w (lower-case letters and digits joined by '-' or '_', at most 64 bytes)", name, ErrQueueName)
	}
	prefix, _, _ := strings.Cut(name, "-")
	if prefix == buildQueue {
		return Queue{Name: name}, nil
	}
	if a := wire.Accel(prefix); slices.Contains(wire.Accels, a) {
		return Queue{Name: name, Accel: a}, nil
	}
	return Queue{}, fmt.Errorf("queue %q: %w: %q before the first '-' is neither an accelerator (%s) nor build", name, ErrQueueName, prefix, wire.AccelNames())
}

// ParseQueues parses a comma-separated list of queue names (see
// parseQueue; blanks are skipped) and reports whether one of them is a
// build queue.
func ParseQueues(list string) (names []string, build bool, err error) {
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		q, err := parseQueue(name)
		if err != nil {
			return nil, false, err
		}
		build = build || q.Build()
		names = append(names, name)
	}
	return names, build, nil
}

// Errors of CheckBootQueue and CheckBuildQueue: a queue of the other kind.
var (
	ErrBuildQueueForBoots = errors.New("is a build queue: boots go to a boot queue (icount, tcg-CLASS, kvm-CLASS)")
	ErrBootQueueForBuilds = errors.New("is a boot queue: builds go to a build queue (build, build-CLASS)")
)

// ErrStuckAfter is wrapped by CheckBootQueue's error for a stuck time shorter
// than minStuckAfter.
var ErrStuckAfter = fmt.Errorf("at least %v (the queue's rescuer looks every 30 s anyway)", minStuckAfter)

// AccelError is a run under one accelerator sent to a queue of another.
type AccelError struct {
	Queue Queue
	Accel wire.Accel // the run's
}

func (e *AccelError) Error() string {
	return fmt.Sprintf("queue %s boots under %s", e.Queue.Name, e.Queue.Accel)
}

// ResolveAccel returns the accelerator of a run whose boots go to the boot
// queue name, asked for as requested: Auto becomes the queue's accelerator
// (its workers were started for it, and the queue's name says which), so
// a comparison decides Auto once, before its first job, and every job
// carries that accelerator (boot jobs refuse Auto: no worker decides for
// itself, which would mix the units of one comparison). Any other
// accelerator is returned as it is, for CheckBootQueue to check. why says
// what Auto became and why, "" when requested is not Auto.
func ResolveAccel(requested wire.Accel, name string) (accel wire.Accel, why string, err error) {
	if requested != wire.AccelAuto {
		return requested, "", nil
	}
	q, err := parseQueue(name)
	switch {
	case err != nil:
		return "", "", err
	case q.Build():
		return "", "", fmt.Errorf("%s %w", q.Name, ErrBuildQueueForBoots)
	}
	return q.Accel, fmt.Sprintf("accel auto: using %s, the accelerator of queue %s, for every boot of this run", q.Accel, q.Name), nil
}

// CheckBootQueue checks the queue that a run under accel sends its boots to,
// each given stuckAfter before it is taken for lost: a boot queue
// (parseQueue; else ErrBuildQueueForBoots after the name) of that
// accelerator (*AccelError), stuckAfter at least minStuckAfter
// (ErrStuckAfter after the duration).
func CheckBootQueue(name string, accel wire.Accel, stuckAfter time.Duration) (Queue, error) {
	q, err := parseQueue(name)
	switch {
	case err != nil:
		return q, err
	case q.Build():
		return q, fmt.Errorf("%s %w", q.Name, ErrBuildQueueForBoots)
	case stuckAfter < minStuckAfter:
		return q, fmt.Errorf("%v: %w", stuckAfter, ErrStuckAfter)
	case accel != q.Accel:
		return q, &AccelError{Queue: q, Accel: accel}
	}
	return q, nil
}

// CheckBuildQueue checks the queue that builds go to: a build queue
// (parseQueue; else ErrBootQueueForBuilds after the name).
func CheckBuildQueue(name string) (Queue, error) {
	q, err := parseQueue(name)
	if err == nil && !q.Build() {
		err = fmt.Errorf("%s %w", q.Name, ErrBootQueueForBuilds)
	}
	return q, err
}

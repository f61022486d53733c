package fleet

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/lpmbisect/lpmbisect/vmrunner"
)

// BuildQueue is the name of the queue of build jobs, and the prefix of
// more of them ("build-big").
const BuildQueue = "build"

// Queue is a parsed queue name. A queue names the host class that works
// it: the part before the first '-' is the accelerator its boots run
// under ("icount", "tcg", "kvm-zen4", "kvm-skylake") or "build" for
// kernel builds ("build", "build-big"); what follows the '-' is the
// operator's name for the hosts' class and means nothing to lpmbisect.
type Queue struct {
	Name string
	// Accel is the accelerator of a boot queue; "" for a build queue.
	Accel vmrunner.Accel
}

// Build reports whether q is a queue of build jobs.
func (q Queue) Build() bool { return q.Accel == "" }

// WallClock reports whether the boots of q measure wall-clock time: such
// boots must not overlap on a host, and A and B of a comparison must run
// on one host.
func (q Queue) WallClock() bool { return q.Accel == vmrunner.TCG || q.Accel == vmrunner.KVM }

// ErrQueueName is wrapped by ParseQueue's errors.
var ErrQueueName = errors.New("not a queue name")

// River's rule for queue names (letters and digits, words joined by '_'
// or '-', at most 64 bytes).
var queueName = regexp.MustCompile(`^[a-z0-9]+(?:[_-][a-z0-9]+)*$`)

// ParseQueue parses a queue name (see Queue).
func ParseQueue(name string) (Queue, error) {
	if len(name) > 64 || !queueName.MatchString(name) {
		return Queue{}, fmt.Errorf("queue %q: %w (lower-case letters and digits joined by '-' or '_', at most 64 bytes)", name, ErrQueueName)
	}
	prefix, _, _ := strings.Cut(name, "-")
	switch a := vmrunner.Accel(prefix); a {
	case vmrunner.Icount, vmrunner.TCG, vmrunner.KVM:
		return Queue{Name: name, Accel: a}, nil
	case BuildQueue:
		return Queue{Name: name}, nil
	}
	return Queue{}, fmt.Errorf("queue %q: %w: %q before the first '-' is neither an accelerator (icount, tcg, kvm) nor build", name, ErrQueueName, prefix)
}

// ParseQueues parses a comma-separated list of queue names (see
// ParseQueue; blanks are skipped) and reports whether one of them is a
// build queue.
func ParseQueues(list string) (names []string, build bool, err error) {
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		q, err := ParseQueue(name)
		if err != nil {
			return nil, false, err
		}
		build = build || q.Build()
		names = append(names, name)
	}
	return names, build, nil
}

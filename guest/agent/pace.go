package agent

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

// settleTime is how long a paced guest waits after a benchmark before it
// says it is ready for the next step, so that the kernel frees the
// benchmark's maps and programs (on a workqueue, after close) within its own
// step. Without it, under TCG, the other guest's next sample ran up to 10 %
// slower: both VMs of a pair share one host CPU.
const settleTime = 150 * time.Millisecond

// gate paces a guest (wire.Plan.Paced): before each step it writes a ready
// note (wire.KeyReady) with the step's number, from 1, and waits for the
// host's go line (wire.Go) on the same channel. Its wait is a
// workloads.Reporter's Gate.
type gate struct {
	w    interface{ Note(key, text string) error }
	ch   *channel
	step int
}

func (g *gate) wait() error {
	g.step++
	if err := g.w.Note(wire.KeyReady, strconv.Itoa(g.step)); err != nil {
		return err
	}
	if _, err := g.ch.readLine(time.Time{}); err != nil {
		return fmt.Errorf("wait for the host before step %d: %w", g.step, err)
	}
	return nil
}

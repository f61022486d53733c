package campaign

import (
	"context"
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
)

// BootResults are the results of one completed boot.
type BootResults []*benchfmt.Result

// Measurer boots kernels and returns what the completed boots delivered.
type Measurer interface {
	// Measure boots each kernel boots times, interleaving the kernels, and
	// returns per kernel the results of each completed boot. When it fails
	// part way it returns what it has with the error; an error wrapping
	// measure.ErrBootFailed means a kernel did not deliver results, which
	// the error names.
	Measure(ctx context.Context, kernels []Candidate, boots int) ([][]BootResults, error)
}

// insightMeasurer is a Measurer that can also run the guest's insight
// pass (measure.Insight) in the first boot of each kernel it boots, for
// the re-check: it returns, besides the boots, the document each kernel's
// guest sent (nil for none). A Measurer without it gives the re-check no
// guest findings, and its report the static insight only.
type insightMeasurer interface {
	MeasureInsight(ctx context.Context, kernels []Candidate, boots int, in *measure.Insight) ([][]BootResults, [][]byte, error)
}

// vmMeasurer measures kernels under QEMU with a measurement setup: the
// candidates of one Measure call are booted unpaired, each call in a
// numbered subdirectory of the setup's run directory.
type vmMeasurer struct {
	Setup *measure.Setup
	Log   *log.Logger // a line per boot; nil for none

	mu   sync.Mutex
	runs int
}

// Measure implements Measurer.
func (m *vmMeasurer) Measure(ctx context.Context, kernels []Candidate, boots int) ([][]BootResults, error) {
	out, _, err := m.MeasureInsight(ctx, kernels, boots, nil)
	return out, err
}

// MeasureInsight implements insightMeasurer: in, when set, is given to
// the measurement (measure.RunOptions.Insight), which decides whether the
// guest's pass runs.
func (m *vmMeasurer) MeasureInsight(ctx context.Context, kernels []Candidate, boots int, in *measure.Insight) ([][]BootResults, [][]byte, error) {
	out := make([][]BootResults, len(kernels))
	docs := make([][]byte, len(kernels))
	if boots <= 0 || len(kernels) == 0 {
		return out, docs, nil
	}
	inputs := make([]string, len(kernels))
	names := make([]string, len(kernels))
	for i, k := range kernels {
		inputs[i], names[i] = k.Input, k.Label
	}
	m.mu.Lock()
	m.runs++
	runDir := filepath.Join(m.Setup.RunDir, fmt.Sprintf("%03d", m.runs))
	m.mu.Unlock()
	r, err := m.Setup.Start(inputs, measure.RunOptions{Names: names, RunDir: runDir, Unpaired: true, Insight: in})
	if err != nil {
		return out, docs, err
	}
	started := time.Now()
	perSide := map[string]int{}
	r.OnBoot = func(r measure.BootReport) {
		if r.Result.Outcome == vmrunner.Canceled {
			return // a signal, or a sibling's failure, which is reported
		}
		status := string(r.Result.Outcome)
		if r.Result.Outcome == vmrunner.OK {
			perSide[r.Side.Name]++
			status += fmt.Sprintf(", %d results over %s", r.Written, r.Result.Channel)
		} else {
			status += ": " + r.Result.Detail + " (console: " + r.Result.ConsoleLog + ")"
		}
		m.logf("[%d/%d] %s boot %d (%s): %s in %s, elapsed %s", r.Done, boots*len(kernels), r.Side.Label,
			perSide[r.Side.Name], r.Result.Accel, status, r.Result.Duration.Round(100*time.Millisecond), measure.Elapsed(started))
	}
	err = r.Measure(ctx, boots)
	for i, s := range r.Sides {
		for _, b := range r.Boots(s.Name) {
			out[i] = append(out[i], b)
		}
		docs[i] = s.Insight
	}
	return out, docs, err
}

func (m *vmMeasurer) logf(format string, args ...any) {
	if m.Log != nil {
		m.Log.Printf(format, args...)
	}
}

// isBootFailure reports whether err says a kernel did not deliver results.
func isBootFailure(err error) bool { return errors.Is(err, measure.ErrBootFailed) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

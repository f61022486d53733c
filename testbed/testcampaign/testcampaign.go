// Package testcampaign holds fake kernels and a fake measurer for the tests
// of campaigns that boot nothing (flow/campaign, flow/bisect).
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package testcampaign

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
)

// Fake kernels for tests that boot nothing: a kernel is a small text file
// whose lines say what a boot of it measures:
//
//	value=1000     insn/op of the lookup benchmark
//	noise=0.03     boot-to-boot wobble of ±3 % (deterministic)
//	noboot         every boot fails
//	extra          any other line changes the image hash, not the value
func WriteKernel(t *testing.T, path string, value float64, extra ...string) string {
	t.Helper()
	text := fmt.Sprintf("value=%g\n%s", value, strings.Join(extra, "\n"))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Resolve resolves a fake kernel: its SHA-256 is the content's.
func Resolve(input string) (*kernel.Kernel, error) {
	data, err := os.ReadFile(input)
	if err != nil {
		return nil, fmt.Errorf("kernel %q: %w", input, kernel.ErrNotFound)
	}
	if !strings.HasPrefix(string(data), "value=") {
		return nil, fmt.Errorf("kernel %q: %w", input, kernel.ErrNotKernel)
	}
	sum := sha256.Sum256(data)
	return &kernel.Kernel{Input: input, Image: input, Release: "6.12.0-test", SHA256: hex.EncodeToString(sum[:])}, nil
}

// Measurer "boots" fake kernels: each boot gives 3 samples of the
// kernel's value with a deterministic wobble of ±0.02 % (like icount).
type Measurer struct {
	mu       sync.Mutex
	boots    map[string]int // boots per image hash
	calls    int
	Cancel   func() // when set, called once calls reaches CancelAt
	CancelAt int
}

func (f *Measurer) Measure(ctx context.Context, kernels []campaign.Candidate, boots int) ([][]campaign.BootResults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.Cancel != nil && f.calls == f.CancelAt {
		f.Cancel()
		return make([][]campaign.BootResults, len(kernels)), context.Canceled
	}
	if f.boots == nil {
		f.boots = map[string]int{}
	}
	out := make([][]campaign.BootResults, len(kernels))
	for i, k := range kernels {
		data, err := os.ReadFile(k.Input)
		if err != nil {
			return out, err
		}
		if strings.Contains(string(data), "noboot") {
			return out, fmt.Errorf("kernel %s: %w: truncated", k.Label, measure.ErrBootFailed)
		}
		rk, _ := Resolve(k.Input)
		var value, noise float64
		fmt.Sscanf(string(data), "value=%g", &value)
		if _, after, ok := strings.Cut(string(data), "noise="); ok {
			fmt.Sscanf(after, "%g", &noise)
		}
		for b := 0; b < boots; b++ {
			f.boots[rk.SHA256]++
			n := f.boots[rk.SHA256]
			var boot campaign.BootResults
			for s := 0; s < 3; s++ {
				v := value * (1 + 2e-4*math.Sin(float64(7*n+s)) + noise*math.Sin(float64(13*n)))
				r := &benchfmt.Result{Name: benchfmt.Name("LPMTrie/op=lookup/keys=random/entries=10000"), Iters: 1000,
					Values: []benchfmt.Value{{Value: v, Unit: "insn/op"}}}
				r.SetConfig("kernel", k.Label)
				r.SetConfig("side", string(rune('A'+i)))
				r.SetConfig("boot", strconv.Itoa(b+1))
				boot = append(boot, r)
			}
			out[i] = append(out[i], boot)
		}
	}
	return out, nil
}

// Calls counts the calls of Measure.
func (f *Measurer) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Boots counts the boots of the image with SHA-256 sha.
func (f *Measurer) Boots(sha string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.boots[sha]
}

// ImagesMeasured counts the distinct images the fake booted.
func (f *Measurer) ImagesMeasured() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.boots)
}

func NewBench(t *testing.T, m campaign.Measurer, dir string, reverse bool) *campaign.Bench {
	t.Helper()
	return &campaign.Bench{
		Judge:    campaign.Judge{Alpha: 0.05, MinEffectPct: 1},
		Store:    &campaign.Store{Dir: dir},
		Measurer: m,
		Resolve:  Resolve,
		MaxBoots: 8,
		Reverse:  reverse,
	}
}

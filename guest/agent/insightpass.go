package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/wire"
)

// insightPass runs the insight pass (workloads.Insight) after the timed
// samples and returns its compressed document, without the kallsyms if the
// plan says the host needs none (wire.Plan.SkipKallsyms) or if the whole
// would exceed wire.MaxInsightBytes (nil, with an info note, when there is
// none to send). lowSampleRate throttles the profile pass on purpose (a
// test's injector).
func insightPass(benches []*workloads.Benchmark, p workloads.Params, plan wire.Plan, lowSampleRate bool, info func(string)) []byte {
	start := time.Now()
	doc := workloads.Insight(benches, p, plan.CountList(), !plan.SkipKallsyms, logf)
	// The memory pass first: the plugin profiles the benchmarks it counts,
	// exactly, and the profile pass samples only the others.
	var exact map[string]bool
	if plan.Memory {
		doc.Memory, exact = memoryPass(benches, p, plan, info)
		logf("memory pass: %d benchmarks in %d ns of guest clock %s", len(doc.Memory.Benchmarks), doc.Memory.Cost, doc.Memory.Problem)
	}
	if plan.ProfilePeriod > 0 {
		doc.Profile = profilePass(benches, p, plan, exact, lowSampleRate)
		logf("profile pass: %d benchmarks in %d ns of guest clock (%s) %s", len(doc.Profile.Benchmarks), doc.Profile.Cost, doc.Profile.Weight, doc.Profile.Problem)
	}
	gz, err := wire.EncodeInsight(doc)
	if errors.Is(err, wire.ErrInsightTooLarge) && doc.Kallsyms != "" {
		doc.Kallsyms, doc.KallsymsProblem = "", fmt.Sprintf("left out: %v", err)
		gz, err = wire.EncodeInsight(doc)
	}
	if err != nil {
		info(fmt.Sprintf("insight pass: %v", err))
		return nil
	}
	kallsyms := fmt.Sprintf("%d bytes of kallsyms", len(doc.Kallsyms))
	if plan.SkipKallsyms {
		kallsyms = "kallsyms not sent (the host has a static symbol source)"
	}
	logf("insight pass: %d programs, %d counts, %s in %d compressed bytes, %v",
		len(doc.Programs), len(doc.Counts), kallsyms, len(gz), time.Since(start).Round(time.Millisecond))
	return gz
}

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
	"github.com/lpmbisect/lpmbisect/workloads"
)

// insightPass runs the insight pass (workloads.Insight) after the timed
// samples and sends its document, without the kallsyms if the whole would
// exceed wire.MaxInsightBytes. What goes wrong short of the channel
// breaking is an info note; the error is the channel's.
func insightPass(w *wire.Writer, benches []*workloads.Benchmark, p workloads.Params, count []string, info func(string)) error {
	start := time.Now()
	doc := workloads.Insight(benches, p, count, logf)
	gz, err := wire.EncodeInsight(doc)
	if errors.Is(err, wire.ErrInsightTooLarge) && doc.Kallsyms != "" {
		doc.Kallsyms, doc.KallsymsProblem = "", fmt.Sprintf("left out: %v", err)
		gz, err = wire.EncodeInsight(doc)
	}
	if err != nil {
		info(fmt.Sprintf("insight pass: %v", err))
		return nil
	}
	logf("insight pass: %d programs, %d counts, %d bytes of kallsyms in %d compressed bytes, %v",
		len(doc.Programs), len(doc.Counts), len(doc.Kallsyms), len(gz), time.Since(start).Round(time.Millisecond))
	return w.Insight(gz)
}

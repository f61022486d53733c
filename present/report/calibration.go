package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lpmbisect/lpmbisect/present/view"
)

// WriteCalibration writes what a calibration measured: per benchmark the
// boots, the centre, the largest and quantile differences between boots,
// the jitter bound and whether the benchmark is deterministic (icount),
// and the floor of the minimum effect the self-compares reached (wall
// time). Format is text, markdown or json (the stored document).
func WriteCalibration(w io.Writer, f Format, c view.Calibration) error {
	if f != FormatJSON {
		return writePrintable(w, func(w io.Writer) error { return writeCalibration(w, f, c) })
	}
	return writeCalibration(w, f, c)
}

func writeCalibration(w io.Writer, f Format, c view.Calibration) error {
	if f == FormatJSON {
		var b bytes.Buffer
		if err := json.Indent(&b, c.Document, "", "  "); err != nil {
			return err
		}
		b.WriteByte('\n')
		_, err := b.WriteTo(w)
		return err
	}
	fmt.Fprintf(w, "calibration of %s (%d boots) on %s: %s\n", c.Kernel, c.Boots, c.Date.Format(time.DateOnly), c.Key)
	sep := "\t"
	if f == FormatMarkdown {
		sep = " | "
		fmt.Fprintf(w, "\n| benchmark | unit | centre | max diff | q%.0f diff | bound | deterministic | floor |\n|---|---|---|---|---|---|---|---|\n", 100*c.Quantile)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if f != FormatMarkdown {
		fmt.Fprintf(tw, "BENCHMARK\tUNIT\tCENTRE\tMAX DIFF\tQ%.0f DIFF\tBOUND\tDETERMINISTIC\tFLOOR\n", 100*c.Quantile)
	}
	for _, b := range c.Rows {
		det := "no"
		if b.Deterministic {
			det = "yes"
		} else if b.Why != "" {
			det = "no: " + b.Why
		}
		floor := "–"
		if b.FloorReached {
			floor = pct(b.Floor)
		} else if b.FloorSought {
			floor = "not reached"
		}
		bound := "–" // wall time: no jitter bound, a floor
		if b.Bound > 0 {
			bound = pct(b.Bound)
		}
		cells := []string{b.Name, b.Unit, fmt.Sprintf("%.4g", b.Centre), pctOrInf(b.MaxDiff), pctOrInf(b.QuantileDiff), bound, det, floor}
		line := strings.Join(cells, sep)
		if f == FormatMarkdown {
			fmt.Fprintf(w, "| %s |\n", mdEscape(line))
			continue
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "bound = max(%s, %g × q%.0f); deterministic: instruction counts, largest difference under %s, no second mode; floor: the smallest minimum effect at which %.0f%% of self-compares said SAME\n",
		pct(c.BoundFloor), c.SafetyFactor, 100*c.Quantile, pct(c.MaxJitter), 100*c.SameShare)
	return err
}

func pctOrInf(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "∞"
	}
	return pct(f)
}

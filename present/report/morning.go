package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/present/view"
)

// WriteMorning writes what a nightly run found, one block per series: the
// night's status and tip, its alerts, its change points (with the
// culprit, or why there is none) and where the mail went. Format is text
// (the default), markdown or json.
func WriteMorning(w io.Writer, f Format, nights []view.NightSummary) error {
	if f != FormatJSON {
		return writePrintable(w, func(w io.Writer) error { return writeMorning(w, f, nights) })
	}
	return writeMorning(w, f, nights)
}

func writeMorning(w io.Writer, f Format, nights []view.NightSummary) error {
	if f == FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(nights)
	}
	md := f == FormatMarkdown
	var b strings.Builder
	for i, n := range nights {
		if i > 0 {
			b.WriteString("\n")
		}
		head := fmt.Sprintf("%s %s: %s", n.Series.Name, n.Night.Date, strings.ToUpper(n.Outcome))
		if md {
			fmt.Fprintf(&b, "## %s\n\n", head)
		} else {
			fmt.Fprintf(&b, "%s\n", head)
		}
		item := "  "
		if md {
			item = "- "
		}
		fmt.Fprintf(&b, "%stip %s, %s", item, tipName(n.Night.Tip), n.Night.Status)
		if n.Night.Reason != "" {
			fmt.Fprintf(&b, ": %s", n.Night.Reason)
		}
		if n.Night.Reference.Release != "" {
			fmt.Fprintf(&b, "; reference %s", n.Night.Reference.Release)
		}
		if n.Booted+n.Resumed > 0 {
			fmt.Fprintf(&b, "; %d boots", n.Booted+n.Resumed)
			if n.Resumed > 0 {
				fmt.Fprintf(&b, " (%d from an interrupted run)", n.Resumed)
			}
		}
		fmt.Fprintf(&b, " in %s\n", n.Took.Round(time.Second))
		for _, r := range n.Rows {
			if r.VsPrevious != nil || r.VsReference != nil {
				fmt.Fprintf(&b, "%s%s: %s", item, r.Benchmark, formatEstimate(r.Tip, r.Unit))
				if r.VsPrevious != nil {
					fmt.Fprintf(&b, ", vs last tip %s", formatVerdict(r.VsPrevious, r.Benchmark, r.Unit))
				}
				if r.VsReference != nil {
					fmt.Fprintf(&b, ", vs reference %s", formatVerdict(r.VsReference, r.Benchmark, r.Unit))
				}
				b.WriteString("\n")
			}
		}
		for _, a := range n.Alerts {
			fmt.Fprintf(&b, "%s%s\n", item, a)
		}
		for _, c := range n.Changes {
			fmt.Fprintf(&b, "%schange point %d (%s): %s; %s\n", item, c.Point.ID, c.What, changePointHeadline(n.Series.Name, c.Point), bisectLine(c.Point))
		}
		if n.Mail != "" {
			fmt.Fprintf(&b, "%smail: %s\n", item, n.Mail)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

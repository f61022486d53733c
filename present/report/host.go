package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// WriteHost writes what this host offers lpmbisect (view.Host): text, or
// json (the view itself).
func WriteHost(w io.Writer, f Format, h view.Host) error {
	if f == FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(h)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	more := func(format string, args ...any) { row("", format, args...) }
	switch {
	case h.QEMUProblem != "":
		row("qemu", "%s: %s", h.QEMU, h.QEMUProblem)
	default:
		row("qemu", "%s %s", h.QEMU, h.QEMUVersion)
	}
	for _, a := range h.Accels {
		works := "does not work"
		if a.Works {
			works = "works"
		}
		row(a.Name, "%s: %s", works, a.Why)
		if a.Source != "" {
			more("%s", a.Source)
		}
		if a.Name == "kvm" {
			for _, b := range h.KVMProbe {
				more("%s", probeBoot(b))
			}
			if h.KVMVerdictFile != "" {
				more("verdict kept in %s", h.KVMVerdictFile)
			}
		}
	}
	auto := h.Auto
	if auto == "" {
		auto = "nothing works here"
	}
	row("auto", "%s", auto)
	if h.MemoryPlugin != "" {
		row("memory plugin", "%s", h.MemoryPlugin)
	} else {
		row("memory plugin", "not found: looked in %s; scripts/setup builds it (--no-memory leaves the memory pass out)", strings.Join(h.MemoryPluginLooked, " and "))
	}
	if h.Browser != "" {
		row("browser", "%s (the served pages' browser test)", h.Browser)
	} else {
		row("browser", "none on PATH (looked for %s): the served pages' browser test skips, or fails under LPMBISECT_REQUIRE_VM; apt-get install chromium (scripts/setup does)", strings.Join(h.BrowserLooked, ", "))
	}
	return tw.Flush()
}

// probeBoot says what one boot of the KVM probe showed, and when.
func probeBoot(b vmrunner.KVMProbeBoot) string {
	s := fmt.Sprintf("probe boot of %s: ", b.Kernel)
	at := fmt.Sprintf("%.3f s after QEMU's start (%.2f s of its CPU)", b.At.Seconds(), b.CPU.Seconds())
	switch b.Event {
	case vmrunner.ProbeBanner:
		s += "banner " + at
	case vmrunner.ProbeReport:
		s += fmt.Sprintf("QEMU's report %s: %q", at, b.Line)
	case vmrunner.ProbeExit:
		s += fmt.Sprintf("QEMU exited %s: %s", at, b.Line)
	case vmrunner.ProbeDeadline:
		s += "no banner nor report by the deadline, " + at
	default:
		s += "ended with the probe, no banner yet"
	}
	return s + fmt.Sprintf("; QEMU gone %.3f s after its start", b.Ended.Seconds())
}

package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// kcidbOrigin is the origin of lpmbisect's KCIDB objects: every id starts
// with it and a colon.
const kcidbOrigin = "lpmbisect"

// KCIDB v4 objects, as much of them as lpmbisect fills (see
// https://github.com/kernelci/kcidb, doc/submitter_guide.md, and the schema
// in kernelci/kcidb-io, kcidb_io/schema/v04_04.py).
type (
	kcidbDoc struct {
		Version   kcidbVersion    `json:"version"`
		Checkouts []kcidbCheckout `json:"checkouts"`
		Builds    []kcidbBuild    `json:"builds"`
		Tests     []kcidbTest     `json:"tests"`
	}
	kcidbVersion struct {
		Major int `json:"major"`
		Minor int `json:"minor"`
	}
	kcidbCheckout struct {
		ID        string `json:"id"`
		Origin    string `json:"origin"`
		Valid     bool   `json:"valid"`
		StartTime string `json:"start_time,omitempty"`
		Comment   string `json:"comment,omitempty"`
	}
	kcidbBuild struct {
		ID         string `json:"id"`
		CheckoutID string `json:"checkout_id"`
		Origin     string `json:"origin"`
		Valid      bool   `json:"valid"`
		Arch       string `json:"architecture"`
		StartTime  string `json:"start_time,omitempty"`
		Comment    string `json:"comment,omitempty"`
	}
	kcidbTest struct {
		ID        string         `json:"id"`
		BuildID   string         `json:"build_id"`
		Origin    string         `json:"origin"`
		Path      string         `json:"path"`
		Status    string         `json:"status"`
		StartTime string         `json:"start_time,omitempty"`
		Number    *kcidbNumber   `json:"number,omitempty"`
		Comment   string         `json:"comment,omitempty"`
		Misc      map[string]any `json:"misc,omitempty"`
	}
	kcidbNumber struct {
		Value  float64 `json:"value"`
		Unit   string  `json:"unit,omitempty"`
		Prefix string  `json:"prefix,omitempty"`
	}
)

// kcidbSchemaVersion is the schema version the documents declare: the
// lowest that has every field they write. A test's number (value and unit)
// came with v4.4; kcidb-io validates a document against the schema of the
// version it declares, and those of v4.0 to v4.3 refuse a number.
var kcidbSchemaVersion = kcidbVersion{Major: 4, Minor: 4}

// kcidbPathPart keeps what a KCIDB test path node may hold.
var kcidbPathPart = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// writeKCIDB writes a comparison as a KCIDB v4.4 submission: kernel B is
// the checkout and build under test, each row a test with status DONE
// (lpmbisect measures; the verdict is in misc) and its centre on B as the
// number with its unit. misc also has A's centre (a_value) and the change
// in percent (change_pct) where there is one: not for a row A did not
// measure, nor for a change from 0 on A (change_note says which), which
// has no percentage. A program B's verifier rejects is one test with
// status FAIL and the verifier's last lines as its comment, and none of
// its rows is a DONE test: a rejected load's counts are where the verifier
// gave up, not a measurement of the program.
func writeKCIDB(w io.Writer, rep *compare.Report, meta view.Meta) error {
	b := meta.B
	if b.Release == "" && b.SHA256 == "" {
		b = meta.A
	}
	start := ""
	if !meta.Date.IsZero() {
		start = meta.Date.UTC().Format(time.RFC3339)
	}
	doc := kcidbDoc{Version: kcidbSchemaVersion}
	id := kcidbOrigin + ":" + kcidbKernelKey(b)
	doc.Checkouts = []kcidbCheckout{{ID: id, Origin: kcidbOrigin, Valid: true, StartTime: start, Comment: b.Release}}
	doc.Builds = []kcidbBuild{{ID: id, CheckoutID: id, Origin: kcidbOrigin, Valid: true, Arch: "x86_64", StartTime: start, Comment: b.Input}}
	run := id + ":" + kcidbRunKey(rep, meta) + ":"
	ids := map[string]int{}
	testID := func(path string) string {
		ids[path]++
		if n := ids[path]; n > 1 { // two names that read alike once kept to the path's characters
			return fmt.Sprintf("%s%s~%d", run, path, n)
		}
		return run + path
	}
	rejected := map[string]bool{}
	for _, p := range meta.Verifier {
		rejected[p.Benchmark] = p.B.Rejected
	}
	for _, r := range rep.Rows {
		if r.B.Boots == 0 || rejected[r.Benchmark] {
			continue
		}
		path := kcidbPath(r.Benchmark, r.Unit)
		doc.Tests = append(doc.Tests, kcidbTest{
			ID: testID(path), BuildID: id, Origin: kcidbOrigin, Path: path, Status: "DONE", StartTime: start,
			Number: &kcidbNumber{Value: r.B.Center, Unit: r.Unit}, Misc: kcidbMisc(r, meta.Accel),
		})
	}
	for _, p := range meta.Verifier {
		if !p.B.Rejected {
			continue
		}
		path := kcidbPath(p.Benchmark, "load")
		misc := map[string]any{"accel": meta.Accel}
		if p.A.Present {
			misc["a_verdict"] = p.A.Verdict()
		}
		doc.Tests = append(doc.Tests, kcidbTest{ID: testID(path), BuildID: id, Origin: kcidbOrigin, Path: path,
			Status: "FAIL", StartTime: start, Comment: p.B.Error, Misc: misc})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// kcidbMisc is a DONE test's misc: the row's verdict, B's boots, the
// accelerator, A's centre and the change in percent, or, where the change
// has no percentage (A did not measure the row, or its centre is not
// positive while B's differs), a note that says why instead.
func kcidbMisc(r compare.Row, accel string) map[string]any {
	misc := map[string]any{"verdict": r.Verdict.String(), "boots": r.B.Boots, "accel": accel}
	switch {
	case r.A.Boots == 0:
		misc["change_note"] = "not measured on A: no change to give"
		return misc
	case r.A.Center > 0 || r.A.Center == r.B.Center:
		misc["change_pct"] = r.DeltaPct
	case r.A.Center == 0:
		misc["change_note"] = "0 on A: a change from 0 has no percentage (a_value and number give both sides)"
	default:
		misc["change_note"] = "negative on A: the change has no percentage (a_value and number give both sides)"
	}
	misc["a_value"] = r.A.Center
	return misc
}

// kcidbKernelKey is a kernel's local id in KCIDB ids: its image's short
// hash, or, without one, its release kept to letters, digits, _ and -. The
// checkout and the build of one image have the same id (KCIDB keeps ids
// per object type): measuring the same image again is the same build.
func kcidbKernelKey(k view.KernelInfo) string {
	if key := words.ShortHash(k.SHA256); key != "" {
		return key
	}
	return kcidbPathPart.ReplaceAllString(k.Release, "_")
}

// kcidbRunKey names one comparison among those of the same build, so that
// each one's tests have ids of their own (KCIDB merges objects of one id):
// a short hash of the other side's key, the start, the seed and every
// row's centres and boots. Writing the same comparison again gives the
// same ids, so a resubmission updates its tests instead of adding to them.
func kcidbRunKey(rep *compare.Report, meta view.Meta) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", kcidbKernelKey(meta.A), kcidbKernelKey(meta.B), meta.Date.UTC().Format(time.RFC3339Nano))
	if meta.Seed != nil {
		fmt.Fprintf(h, "seed %d\x00", *meta.Seed)
	}
	for _, r := range rep.Rows {
		fmt.Fprintf(h, "%s %s %g %d %g %d\x00", r.Benchmark, r.Unit, r.A.Center, r.A.Boots, r.B.Center, r.B.Boots)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// kcidbPath is a row's test path: "lpmbisect." and the name's parts and
// the unit, each kept to letters, digits, _ and -.
func kcidbPath(bench, unit string) string {
	parts := []string{kcidbOrigin}
	for _, p := range append(strings.Split(bench, "/"), unit) {
		parts = append(parts, strings.Trim(kcidbPathPart.ReplaceAllString(p, "_"), "_"))
	}
	return strings.Join(parts, ".")
}

// writeGitHub writes a comparison as GitHub Actions workflow commands, for
// the rows that are weighed (compare.Row.Weighed: not the controls, nor a
// user's program's total, whose own work is): an
// ::error line for each row DIFFERENT for the worse and each program B's
// verifier rejects that A's accepted, a ::notice for each row DIFFERENT
// for the better and each program only B's verifier accepts, a ::warning
// for each UNKNOWN row, and nothing for SAME.
func writeGitHub(w io.Writer, rep *compare.Report, meta view.Meta) error {
	for _, r := range rep.Rows {
		if !r.Weighed() || !r.Compared() {
			continue
		}
		level := githubLevel(r.Verdict, r.Worse())
		if level == "" {
			continue
		}
		msg := fmt.Sprintf("%s %s: %s → %s (%s), %v", r.Benchmark, r.Unit, view.FormatValue(r.A.Center, r.Unit), view.FormatValue(r.B.Center, r.Unit), view.FormatDelta(r.DeltaPct), r.Verdict)
		if err := githubCommand(w, level, "lpmbisect: "+r.Benchmark, msg); err != nil {
			return err
		}
	}
	for _, p := range meta.Verifier {
		level, title, msg := "", "", ""
		switch {
		case p.B.Rejected && !p.A.Rejected:
			level, title, msg = "error", " stops verifying", fmt.Sprintf("%s (%s): B's verifier rejects it, A's accepted it: %s", p.Program, p.File, p.B.Error)
		case p.A.Rejected && !p.B.Rejected && p.B.Present:
			level, title, msg = "notice", " starts verifying", fmt.Sprintf("%s (%s): B's verifier accepts it, A's rejected it: %s", p.Program, p.File, p.A.Error)
		default:
			continue
		}
		if err := githubCommand(w, level, "lpmbisect: "+p.Program+title, msg); err != nil {
			return err
		}
	}
	return nil
}

// githubLevel is the workflow command of a row's verdict: error for
// DIFFERENT for the worse, notice for DIFFERENT otherwise, warning for
// UNKNOWN, "" (none) for SAME.
func githubLevel(v compare.Verdict, worse bool) string {
	switch {
	case v == compare.Different && worse:
		return "error"
	case v == compare.Different:
		return "notice"
	case v == compare.Unknown:
		return "warning"
	}
	return ""
}

// githubCommand writes one workflow command, its title and message
// escaped.
func githubCommand(w io.Writer, level, title, msg string) error {
	_, err := fmt.Fprintf(w, "::%s title=%s::%s\n", level, githubProperty(title), githubData(msg))
	return err
}

// writeSeriesGitHub writes a series as GitHub Actions workflow commands,
// per patch as writeGitHub does per row: for each benchmark a patch moved
// against its parent, an ::error when DIFFERENT for the worse, a ::notice
// when DIFFERENT otherwise, a ::warning when UNKNOWN; an ::error for a
// patch that does not apply, build or boot; nothing for SAME. Subjects
// and details are untrusted text, escaped as every message is.
func writeSeriesGitHub(w io.Writer, s view.Series) error {
	for i, p := range s.Patches {
		patch := fmt.Sprintf("%d/%d %s %s", p.N, p.Total, words.ShortHash(p.Commit), p.Subject)
		switch p.Status {
		case "build-failed", "boot-failed", "not-applied":
			if err := githubCommand(w, "error", fmt.Sprintf("lpmbisect: patch %d/%d %s", p.N, p.Total, parentCell(p, view.SeriesCell{})), patch+": "+p.Detail); err != nil {
				return err
			}
			continue
		}
		for _, b := range s.Benchmarks {
			d := b.Cells[i].VsParent
			if d == nil {
				continue
			}
			level := githubLevel(d.Verdict, d.Direction == "worse")
			if level == "" {
				continue
			}
			against := "its parent"
			if !p.Parent {
				against = "the base"
				if p.AgainstN > 0 {
					against = fmt.Sprintf("patch %d/%d", p.AgainstN, p.Total)
				}
			}
			msg := fmt.Sprintf("%s: %s %s %s against %s, %v", patch, b.Benchmark, b.Unit, view.FormatDelta(d.DeltaPct), against, d.Verdict)
			if err := githubCommand(w, level, fmt.Sprintf("lpmbisect: patch %d/%d %s", p.N, p.Total, b.Benchmark), msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// githubData escapes a workflow command's message (%, CR, LF).
func githubData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// githubProperty escapes a workflow command's property value (also : and
// ,).
func githubProperty(s string) string {
	return strings.NewReplacer(":", "%3A", ",", "%2C").Replace(githubData(s))
}

// allWarnings are the warnings every format prints: compare's (warnings)
// and the programs whose verifier verdict differs between the sides or
// that a side rejects (verifierOutcomes).
func allWarnings(rep *compare.Report, meta view.Meta) []string {
	return append(warnings(rep, meta.Insight), verifierOutcomes(meta)...)
}

// verifierOutcomes says, per program a side's verifier rejected, what
// happened: "Verifier: xdp_movsx (movsx.o) starts verifying: A rejected it
// (BPF_MOV uses reserved fields), B accepts it."
func verifierOutcomes(meta view.Meta) []string {
	var out []string
	for _, p := range meta.Verifier {
		a, b := p.A, p.B
		why := func(s view.VerifierSide) string {
			if s.Error == "" {
				return ""
			}
			return " (" + s.Error + ")"
		}
		var s string
		switch {
		case a.Rejected && b.Rejected:
			s = fmt.Sprintf("is rejected by both: A%s, B%s", why(a), why(b))
		case a.Rejected && b.Present:
			s = fmt.Sprintf("starts verifying: A rejected it%s, B accepts it", why(a))
		case b.Rejected && a.Present:
			s = fmt.Sprintf("stops verifying: A accepted it, B rejects it%s", why(b))
		case a.Rejected:
			s = "is rejected by A" + why(a)
		case b.Rejected:
			s = "is rejected by B" + why(b)
		default:
			continue
		}
		out = append(out, fmt.Sprintf("Verifier: %s (%s) %s.", p.Program, p.File, s))
	}
	return out
}

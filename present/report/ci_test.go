package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchproc"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// verifierResults are 4 icount boots per side of an own program, a
// workload program both sides accept, and xdp_movsx, which A (6.1)
// rejects and B (6.12) accepts, as the guest writes them.
func verifierResults() string {
	var sb strings.Builder
	for _, side := range []string{"A", "B"} {
		for boot := 1; boot <= 4; boot++ {
			fmt.Fprintf(&sb, "accel: icount\nside: %s\nboot: %d\n", side, boot)
			if side == "A" {
				sb.WriteString("BenchmarkVerifier/prog=lpm_lookup/keys=random/entries=10000 1 256000 insn/op 49 insns-processed 49 insns-verified 4 states-total 4 states-peak 0 states-per-insn-max 3 mark-read-max 1 verifier-verdict\n")
				sb.WriteString("BenchmarkVerifier/prog=xdp_lpm 1 90000 insn/op 30 insns-processed 30 insns-verified 2 states-total 2 states-peak 0 states-per-insn-max 1 mark-read-max 1 verifier-verdict\n")
				sb.WriteString("verifier-error: BPF_MOV uses reserved fields\nBenchmarkVerifier/prog=xdp_movsx 1 27000 insn/op 7 insns-processed 0 states-total 0 states-peak 0 states-per-insn-max 0 mark-read-max 2 verifier-verdict\nverifier-error:\n")
			} else {
				sb.WriteString("BenchmarkVerifier/prog=lpm_lookup/keys=random/entries=10000 1 300000 insn/op 52 insns-processed 52 insns-verified 4 states-total 4 states-peak 0 states-per-insn-max 1 verifier-verdict\n")
				sb.WriteString("BenchmarkVerifier/prog=xdp_lpm 1 95000 insn/op 30 insns-processed 30 insns-verified 2 states-total 2 states-peak 0 states-per-insn-max 1 verifier-verdict\n")
				sb.WriteString("BenchmarkVerifier/prog=xdp_movsx 1 52000 insn/op 14 insns-processed 14 insns-verified 1 states-total 1 states-peak 0 states-per-insn-max 1 verifier-verdict\n")
			}
		}
	}
	return sb.String()
}

func verifierReport(t *testing.T) (*compare.Report, view.Meta) {
	t.Helper()
	text := verifierResults()
	rep := build(t, text, compare.Options{})
	meta := testMeta
	meta.Verifier = view.Verifiers(rep.Rows, parse(t, text), view.Workload{File: "movsx.o", Programs: []string{"xdp_movsx", "xdp_lpm"}})
	return rep, meta
}

func TestWriteVeristatCompare(t *testing.T) {
	_, meta := verifierReport(t)
	var b bytes.Buffer
	if err := WriteVeristatCompare(&b, meta.Verifier); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"file_name,prog_name,verdict_base,verdict_comp,verdict_diff,duration_base,duration_comp,duration_diff,total_insns_base,total_insns_comp,total_insns_diff,total_states_base,total_states_comp,total_states_diff,peak_states_base,peak_states_comp,peak_states_diff,max_states_per_insn_base,max_states_per_insn_comp,max_states_per_insn_diff,mark_read_max_len_base,mark_read_max_len_comp,mark_read_max_len_diff",
		"lpmbisect,lpm_lookup/keys=random/entries=10000,success,success,MATCH,256,300,+44 (+17.19%),49,52,+3 (+6.12%),4,4,+0 (+0.00%),4,4,+0 (+0.00%),0,0,+0 (+0.00%),3,0,-3 (-100.00%)",
		"movsx.o,xdp_lpm,success,success,MATCH,90,95,+5 (+5.56%),30,30,+0 (+0.00%),2,2,+0 (+0.00%),2,2,+0 (+0.00%),0,0,+0 (+0.00%),1,0,-1 (-100.00%)",
		"movsx.o,xdp_movsx,failure,success,MISMATCH,27,52,+25 (+92.59%),7,14,+7 (+100.00%),0,1,+1 (+100.00%),0,1,+1 (+100.00%),0,0,+0 (+0.00%),0,0,+0 (+0.00%)",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("WriteVeristatCompare() =\n%s\nwant\n%s", b.String(), strings.Join(want, "\n"))
	}
	if meta.Verifier[2].A.Error != "BPF_MOV uses reserved fields" || meta.Verifier[2].B.Error != "" {
		t.Errorf("xdp_movsx errors = %q, %q; want A's reason only", meta.Verifier[2].A.Error, meta.Verifier[2].B.Error)
	}
}

func TestWriteVeristat(t *testing.T) {
	_, meta := verifierReport(t)
	var b bytes.Buffer
	if err := WriteVeristat(&b, meta.Verifier); err != nil {
		t.Fatal(err)
	}
	want := "file_name,prog_name,verdict,duration,total_insns,total_states,peak_states,max_states_per_insn,mark_read_max_len\n" +
		"lpmbisect,lpm_lookup/keys=random/entries=10000,success,256,49,4,4,0,3\nmovsx.o,xdp_lpm,success,90,30,2,2,0,1\nmovsx.o,xdp_movsx,failure,27,7,0,0,0,0\n"
	if b.String() != want {
		t.Errorf("WriteVeristat() =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteGitHub(t *testing.T) {
	rep, meta := verifierReport(t)
	var b bytes.Buffer
	if err := WriteGitHub(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"::warning title=lpmbisect%3A Verifier/prog=xdp_movsx::Verifier/prog=xdp_movsx insns-processed: 7 insns-processed → 14 insns-processed (+100.0%25), UNKNOWN\n",
		"::notice title=lpmbisect%3A xdp_movsx starts verifying::xdp_movsx (movsx.o): B's verifier accepts it, A's rejected it: BPF_MOV uses reserved fields\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteGitHub() lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "xdp_lpm insns-processed") {
		t.Errorf("WriteGitHub() annotates a SAME row:\n%s", out)
	}
	if got := githubData("50%\nx"); got != "50%25%0Ax" {
		t.Errorf("githubData() = %q; want 50%%25%%0Ax", got)
	}
}

// validateKCIDB checks a KCIDB v4 submission against the rules of the
// schema as KCIDB's submitter guide documents them: a version of major 4;
// checkouts, builds and tests as arrays of objects; every object with an
// origin of lower-case letters, digits and underscores and an id that is
// its origin, a colon and a local id; a build with its checkout_id, a test
// with its build_id; a test status among ERROR, FAIL, MISS, PASS, DONE and
// SKIP; a test path of dot-separated names; a number with a numeric value
// and, if given, a string unit and a metric or binary prefix; start times
// in RFC 3339; no other top-level keys; and, as each id must identify its
// object uniquely among those of its origin, no id twice among the
// objects of one type.
func validateKCIDB(doc []byte) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	var top map[string]any
	if err := json.Unmarshal(doc, &top); err != nil {
		return []error{fmt.Errorf("not a JSON object: %v", err)}
	}
	known := map[string]bool{"version": true, "checkouts": true, "builds": true, "tests": true, "issues": true, "incidents": true}
	for k := range top {
		if !known[k] {
			bad("unknown top-level key %q", k)
		}
	}
	v, ok := top["version"].(map[string]any)
	if !ok {
		bad("version: missing or not an object")
	} else {
		if major, ok := v["major"].(float64); !ok || major != 4 {
			bad("version.major = %v; want 4", v["major"])
		}
		if minor, ok := v["minor"].(float64); ok && (minor < 0 || minor != float64(int(minor))) {
			bad("version.minor = %v; want a whole number ≥ 0", v["minor"])
		}
	}
	origin := regexp.MustCompile(`^[a-z0-9_]+$`)
	path := regexp.MustCompile(`^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)?$`)
	status := map[string]bool{"ERROR": true, "FAIL": true, "MISS": true, "PASS": true, "DONE": true, "SKIP": true}
	parents := map[string]string{"checkouts": "", "builds": "checkout_id", "tests": "build_id"}
	for _, kind := range []string{"checkouts", "builds", "tests"} {
		raw, present := top[kind]
		if !present {
			continue
		}
		objs, ok := raw.([]any)
		if !ok {
			bad("%s: not an array", kind)
			continue
		}
		seen := map[string]int{}
		for i, o := range objs {
			obj, ok := o.(map[string]any)
			if !ok {
				bad("%s[%d]: not an object", kind, i)
				continue
			}
			org, _ := obj["origin"].(string)
			if !origin.MatchString(org) {
				bad("%s[%d].origin = %v; want [a-z0-9_]+", kind, i, obj["origin"])
			}
			id, _ := obj["id"].(string)
			if local, ok := strings.CutPrefix(id, org+":"); !ok || local == "" {
				bad("%s[%d].id = %v; want %q, a colon and a local id", kind, i, obj["id"], org)
			}
			if j, dup := seen[id]; dup {
				bad("%s[%d].id = %q, the id of %s[%d]: want ids unique", kind, i, id, kind, j)
			}
			seen[id] = i
			if p := parents[kind]; p != "" {
				if s, _ := obj[p].(string); s == "" {
					bad("%s[%d].%s: missing", kind, i, p)
				}
			}
			if t, ok := obj["start_time"]; ok {
				if s, _ := t.(string); s == "" {
					bad("%s[%d].start_time = %v; want RFC 3339", kind, i, t)
				} else if _, err := time.Parse(time.RFC3339, s); err != nil {
					bad("%s[%d].start_time = %q; want RFC 3339", kind, i, s)
				}
			}
			if v, ok := obj["valid"]; ok {
				if _, ok := v.(bool); !ok {
					bad("%s[%d].valid = %v; want a boolean", kind, i, v)
				}
			}
			if kind != "tests" {
				continue
			}
			if s, ok := obj["status"]; ok && !status[fmt.Sprint(s)] {
				bad("tests[%d].status = %v; want ERROR, FAIL, MISS, PASS, DONE or SKIP", i, s)
			}
			if p, ok := obj["path"]; ok && !path.MatchString(fmt.Sprint(p)) {
				bad("tests[%d].path = %q; want dot-separated names", i, p)
			}
			if n, ok := obj["number"]; ok {
				num, ok := n.(map[string]any)
				if !ok {
					bad("tests[%d].number: not an object", i)
					continue
				}
				if _, ok := num["value"].(float64); !ok {
					bad("tests[%d].number.value = %v; want a number", i, num["value"])
				}
				if u, ok := num["unit"]; ok {
					if _, ok := u.(string); !ok {
						bad("tests[%d].number.unit = %v; want a string", i, u)
					}
				}
				if p, ok := num["prefix"]; ok && p != "metric" && p != "binary" {
					bad("tests[%d].number.prefix = %v; want metric or binary", i, p)
				}
			}
		}
	}
	return errs
}

func TestWriteKCIDBValid(t *testing.T) {
	rep, meta := verifierReport(t)
	var b bytes.Buffer
	if err := WriteKCIDB(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	if errs := validateKCIDB(b.Bytes()); len(errs) > 0 {
		t.Fatalf("WriteKCIDB() is not a valid KCIDB v4 submission: %v\n%s", errs, b.String())
	}
	var doc kcidbDoc
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Checkouts) != 1 || len(doc.Builds) != 1 || doc.Builds[0].CheckoutID != doc.Checkouts[0].ID {
		t.Errorf("WriteKCIDB() checkouts %+v, builds %+v; want one build of one checkout", doc.Checkouts, doc.Builds)
	}
	found := false
	for _, test := range doc.Tests {
		if test.Status != "DONE" || test.Number == nil || test.Number.Unit == "" {
			t.Errorf("test %+v: want status DONE and a number with its unit", test)
		}
		if test.Path == "lpmbisect.Verifier.prog_xdp_movsx.insns-processed" && test.Number.Value == 14 {
			found = true
		}
	}
	if !found {
		t.Errorf("WriteKCIDB() lacks xdp_movsx's 14 insns-processed on B:\n%s", b.String())
	}
}

// TestKCIDBTestIDsPerComparison: the tests of two comparisons of one
// build have ids of their own, and writing one comparison again gives the
// same ids.
func TestKCIDBTestIDsPerComparison(t *testing.T) {
	rep, meta := verifierReport(t)
	ids := func(meta view.Meta) ([]string, string) {
		var b bytes.Buffer
		if err := WriteKCIDB(&b, rep, meta); err != nil {
			t.Fatal(err)
		}
		var doc kcidbDoc
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, test := range doc.Tests {
			out = append(out, test.ID)
		}
		return out, doc.Builds[0].ID
	}
	first, build := ids(meta)
	again, _ := ids(meta)
	if !slices.Equal(first, again) {
		t.Errorf("WriteKCIDB() twice of one comparison: test ids %v, then %v; want the same", first, again)
	}
	other := meta
	other.A.SHA256 = strings.Repeat("e", 64)
	later := meta
	later.Date = meta.Date.Add(time.Hour)
	for name, m := range map[string]view.Meta{"another A": other, "another start": later} {
		got, gotBuild := ids(m)
		if gotBuild != build {
			t.Errorf("%s: build id %s; want B's %s", name, gotBuild, build)
		}
		for i := range got {
			if got[i] == first[i] || !strings.HasPrefix(got[i], build+":") {
				t.Errorf("%s: test id %s, first comparison's %s; want ids of its own under the build's", name, got[i], first[i])
			}
		}
	}
}

// TestKCIDBValidatorRejects shows the validator fails on broken documents,
// each breaking one rule.
func TestKCIDBValidatorRejects(t *testing.T) {
	rep, meta := verifierReport(t)
	var b bytes.Buffer
	if err := WriteKCIDB(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ old, new, want string }{
		"major 3":           {`"major": 4`, `"major": 3`, "version.major"},
		"id without origin": {`"id": "lpmbisect:391d229a7c64"`, `"id": "391d229a7c64"`, "checkouts[0].id"},
		"duplicate test id": {`.prog_xdp_lpm.insns-processed",`, `.prog_xdp_lpm.insn_op",`, "want ids unique"},
		"bad status":        {`"status": "DONE"`, `"status": "OK"`, "status"},
		"no build_id":       {`"build_id": "lpmbisect:391d229a7c64",`, ``, "build_id: missing"},
		"number as string":  {`"value": 14,`, `"value": "14",`, "number.value"},
		"path with slash":   {`"path": "lpmbisect.Verifier`, `"path": "lpmbisect/Verifier`, "path"},
		"origin upper case": {`"origin": "lpmbisect"`, `"origin": "LPM"`, "origin"},
		"extra key":         {`"version": {`, `"extra": 1, "version": {`, "unknown top-level key"},
	} {
		broken := strings.Replace(b.String(), c.old, c.new, 1)
		if broken == b.String() {
			t.Fatalf("%s: %q not in the document", name, c.old)
		}
		errs := validateKCIDB([]byte(broken))
		t.Logf("%s: %v", name, errs)
		if len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), c.want) {
			t.Errorf("%s: validateKCIDB() = %v; want an error about %s", name, errs, c.want)
		}
	}
}

// TestVerifierOutcomeInEveryFormat: a program one side rejects is said so
// in text, markdown, JSON and HTML.
func TestVerifierOutcomeInEveryFormat(t *testing.T) {
	rep, meta := verifierReport(t)
	want := "Verifier: xdp_movsx (movsx.o) starts verifying: A rejected it (BPF_MOV uses reserved fields), B accepts it."
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML} {
		var b bytes.Buffer
		if err := Write(&b, f, rep, meta); err != nil {
			t.Fatal(err)
		}
		// Text wraps, markdown escapes: compare words.
		got := strings.Join(strings.Fields(strings.ReplaceAll(b.String(), "\\", "")), " ")
		if !strings.Contains(got, want) {
			t.Errorf("Write(%s) lacks %q:\n%s", f, want, b.String())
		}
	}
}

// TestKCIDBOfDebianKernels validates the KCIDB document of Debian 6.1 vs
// 6.12 (compare --accel icount --bench 'Verifier/' --workload
// examples/movsx/movsx.o: every program of lpmbisect's and movsx's, with
// the LPM controls, 2 boots per side; then lpmbisect stat --format kcidb
// of its results), and that its test ids are its build's and unique.
func TestKCIDBOfDebianKernels(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("testdata", "kcidb-6.1-vs-6.12.json"))
	if err != nil {
		t.Fatal(err)
	}
	if errs := validateKCIDB(doc); len(errs) > 0 {
		t.Errorf("testdata/kcidb-6.1-vs-6.12.json: %v", errs)
	}
	var parsed kcidbDoc
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	progs := map[string]bool{}
	for _, test := range parsed.Tests {
		if !strings.HasPrefix(test.ID, parsed.Builds[0].ID+":") || !strings.HasSuffix(test.ID, ":"+test.Path) {
			t.Errorf("test id %s; want the build's id, the comparison's key and the path %s", test.ID, test.Path)
		}
		if prog, ok := strings.CutPrefix(test.Path, "lpmbisect.Verifier.prog_"); ok {
			progs[strings.SplitN(prog, ".", 2)[0]] = true
		}
	}
	if len(progs) < 20 {
		t.Errorf("the document has tests of %d programs; want every program of lpmbisect's benchmarks", len(progs))
	}
	broken := strings.Replace(string(doc), `"major": 4`, `"major": 5`, 1)
	errs := validateKCIDB([]byte(broken))
	t.Logf("the same document with major 5: %v", errs)
	if len(errs) != 1 {
		t.Errorf("validateKCIDB(major 5) = %v; want one error", errs)
	}
}

// TestKCIDBTestIDsOfPathsAlike: two rows whose names read alike once kept
// to a path's characters still get ids of their own.
func TestKCIDBTestIDsOfPathsAlike(t *testing.T) {
	b1 := compare.Summary{Boots: 1, Center: 1}
	rep := &compare.Report{Rows: []compare.Row{{Benchmark: "X/a=b", Unit: "u", B: b1}, {Benchmark: "X/a_b", Unit: "u", B: b1}}}
	var b bytes.Buffer
	if err := WriteKCIDB(&b, rep, testMeta); err != nil {
		t.Fatal(err)
	}
	if errs := validateKCIDB(b.Bytes()); len(errs) > 0 {
		t.Errorf("WriteKCIDB(rows X/a=b and X/a_b): %v\n%s", errs, b.String())
	}
}

// TestBenchstatCommandOfVerifierRows: the benchstat command the report
// suggests for results with verifier rows ignores the keys that annotate a
// single load (the rejection's reason, the program and attach types), so
// that benchstat, which puts each combination of configuration keys in a
// table of its own (its -table .config), sees one table, where every
// sample of each row and side is in one cell.
func TestBenchstatCommandOfVerifierRows(t *testing.T) {
	rep, _ := verifierReport(t)
	cmd := strings.Fields(BenchstatCommand(rep, "tcg-icount", "results.txt"))
	if len(cmd) != 6 || cmd[1] != "-col" || cmd[3] != "-ignore" {
		t.Fatalf("BenchstatCommand() = %q; want benchstat -col KEY -ignore KEYS FILE", cmd)
	}
	col, ignore := cmd[2], cmd[4]
	for _, key := range []string{"verifier-error", "prog-type", "attach-type"} {
		if !slices.Contains(strings.Split(ignore, ","), key) {
			t.Errorf("BenchstatCommand() = %q; want %s ignored", cmd, key)
		}
	}
	tables := func(ignore string) (map[string]bool, map[string]int) {
		var parser benchproc.ProjectionParser
		filter, _ := benchproc.NewFilter("*")
		tableBy, err := parser.Parse(".config", filter)
		if err != nil {
			t.Fatal(err)
		}
		colBy, _ := parser.Parse(col, filter)
		rowBy, _ := parser.Parse(".fullname", filter)
		if _, err := parser.Parse(ignore, filter); err != nil {
			t.Fatal(err)
		}
		out, cells := map[string]bool{}, map[string]int{}
		r := benchfmt.NewReader(strings.NewReader(verifierResults()), "results.txt")
		for r.Scan() {
			if res, ok := r.Result().(*benchfmt.Result); ok {
				table := tableBy.Project(res).StringValues()
				out[table] = true
				cells[table+" "+rowBy.Project(res).StringValues()+" "+colBy.Project(res).StringValues()]++
			}
		}
		return out, cells
	}
	got, cells := tables(ignore)
	if len(got) != 1 {
		t.Errorf("benchstat -col %s -ignore %s: %d tables %v; want 1", col, ignore, len(got), got)
	}
	for cell, n := range cells {
		if n != 4 {
			t.Errorf("benchstat -col %s -ignore %s: cell %s has %d samples; want the 4 boots'", col, ignore, cell, n)
		}
	}
	if got, _ := tables("boot,image,phases"); len(got) < 2 {
		t.Errorf("benchstat -ignore boot,image,phases: %d tables; want the rejected loads' apart, which is why the result keys are ignored", len(got))
	}
}

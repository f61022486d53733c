package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// workload program both sides accept, xdp_movsx, which A (6.1) rejects and
// B (6.12) accepts, and xdp_stop, which A accepts and B rejects, as the
// guest writes them.
func verifierResults() string {
	var sb strings.Builder
	own := "prog-type: xdp\nattach-type: cgroup_inet_ingress\n"
	workload := "prog-type: xdp\nattach-type: xdp\n"
	for _, side := range []string{"A", "B"} {
		for boot := 1; boot <= 4; boot++ {
			fmt.Fprintf(&sb, "accel: icount\nside: %s\nboot: %d\n", side, boot)
			if side == "A" {
				sb.WriteString(own + "BenchmarkVerifier/prog=lpm_lookup/keys=random/entries=10000 1 256000 insn/op 49 insns-processed 49 insns-verified 4 states-total 4 states-peak 0 states-per-insn-max 3 mark-read-max 8 stack-bytes 14 prog-insns 96 jited-bytes 1 verifier-verdict\n")
				sb.WriteString(workload + "BenchmarkVerifier/prog=xdp_lpm 1 90000 insn/op 30 insns-processed 30 insns-verified 2 states-total 2 states-peak 0 states-per-insn-max 1 mark-read-max 0 stack-bytes 10 prog-insns 60 jited-bytes 1 verifier-verdict\n")
				sb.WriteString("verifier-error: BPF_MOV uses reserved fields\nBenchmarkVerifier/prog=xdp_movsx 1 27000 insn/op 7 insns-processed 0 states-total 0 states-peak 0 states-per-insn-max 0 mark-read-max 0 stack-bytes 3 prog-insns 2 verifier-verdict\nverifier-error:\n")
				sb.WriteString("BenchmarkVerifier/prog=xdp_stop 1 40000 insn/op 12 insns-processed 12 insns-verified 1 states-total 1 states-peak 0 states-per-insn-max 1 mark-read-max 0 stack-bytes 4 prog-insns 32 jited-bytes 1 verifier-verdict\n")
			} else {
				sb.WriteString(own + "BenchmarkVerifier/prog=lpm_lookup/keys=random/entries=10000 1 300000 insn/op 52 insns-processed 52 insns-verified 4 states-total 4 states-peak 0 states-per-insn-max 8 stack-bytes 14 prog-insns 104 jited-bytes 1 verifier-verdict\n")
				sb.WriteString(workload + "BenchmarkVerifier/prog=xdp_lpm 1 95000 insn/op 30 insns-processed 30 insns-verified 2 states-total 2 states-peak 0 states-per-insn-max 0 stack-bytes 10 prog-insns 64 jited-bytes 1 verifier-verdict\n")
				sb.WriteString("BenchmarkVerifier/prog=xdp_movsx 1 52000 insn/op 14 insns-processed 14 insns-verified 1 states-total 1 states-peak 0 states-per-insn-max 0 stack-bytes 3 prog-insns 40 jited-bytes 1 verifier-verdict\n")
				sb.WriteString("verifier-error: R0 !read_ok\nBenchmarkVerifier/prog=xdp_stop 1 20000 insn/op 3 insns-processed 0 states-total 0 states-peak 0 states-per-insn-max 0 stack-bytes 4 prog-insns 2 verifier-verdict\nverifier-error:\n")
			}
			sb.WriteString("prog-type:\nattach-type:\n")
		}
	}
	return sb.String()
}

func verifierReport(t *testing.T) (*compare.Report, view.Meta) {
	t.Helper()
	text := verifierResults()
	rep := build(t, text, compare.Options{})
	meta := testMeta
	meta.Verifier = view.Verifiers(rep.Rows, parse(t, text), view.Workload{File: "movsx.o", Programs: []string{"xdp_movsx", "xdp_lpm", "xdp_stop"}})
	return rep, meta
}

func TestWriteVeristatCompare(t *testing.T) {
	_, meta := verifierReport(t)
	var b bytes.Buffer
	if err := writeVeristatCompare(&b, meta.Verifier, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// veristat -C -o csv's columns, its order by file and program, N/A
	// for what a side has not (movsx.o's 0 on 6.12, every mem_peak, the
	// JIT size of a rejected program).
	want := []string{
		"file_name,prog_name,verdict_base,verdict_comp,verdict_diff,duration_base,duration_comp,duration_diff,total_insns_base,total_insns_comp,total_insns_diff,total_states_base,total_states_comp,total_states_diff,peak_states_base,peak_states_comp,peak_states_diff,max_states_per_insn_base,max_states_per_insn_comp,max_states_per_insn_diff,max_mark_read_len_base,max_mark_read_len_comp,max_mark_read_len_diff,prog_size_base,prog_size_comp,prog_size_diff,prog_size_jited_base,prog_size_jited_comp,prog_size_jited_diff,prog_type_base,prog_type_comp,prog_type_diff,attach_type_base,attach_type_comp,attach_type_diff,stack_depth_base,stack_depth_comp,stack_depth_diff,mem_peak_base,mem_peak_comp,mem_peak_diff",
		"lpmbisect,lpm_lookup/keys=random/entries=10000,success,success,MATCH,256,300,+44 (+17.19%),49,52,+3 (+6.12%),4,4,+0 (+0.00%),4,4,+0 (+0.00%),0,0,+0 (+0.00%),3,N/A,N/A,14,14,+0 (+0.00%),96,104,+8 (+8.33%),xdp,xdp,MATCH,cgroup_inet_ingress,cgroup_inet_ingress,MATCH,8,8,+0 (+0.00%),N/A,N/A,N/A",
		"movsx.o,xdp_lpm,success,success,MATCH,90,95,+5 (+5.56%),30,30,+0 (+0.00%),2,2,+0 (+0.00%),2,2,+0 (+0.00%),0,0,+0 (+0.00%),1,N/A,N/A,10,10,+0 (+0.00%),60,64,+4 (+6.67%),xdp,xdp,MATCH,xdp,xdp,MATCH,0,0,+0 (+0.00%),N/A,N/A,N/A",
		"movsx.o,xdp_movsx,failure,success,MISMATCH,27,52,+25 (+92.59%),7,14,+7 (+100.00%),0,1,+1 (+100.00%),0,1,+1 (+100.00%),0,0,+0 (+0.00%),0,N/A,N/A,3,3,+0 (+0.00%),N/A,40,N/A,xdp,xdp,MATCH,xdp,xdp,MATCH,0,0,+0 (+0.00%),N/A,N/A,N/A",
		"movsx.o,xdp_stop,success,failure,MISMATCH,40,20,-20 (-50.00%),12,3,-9 (-75.00%),1,0,-1 (-100.00%),1,0,-1 (-100.00%),0,0,+0 (+0.00%),1,N/A,N/A,4,4,+0 (+0.00%),32,N/A,N/A,xdp,xdp,MATCH,xdp,xdp,MATCH,0,0,+0 (+0.00%),N/A,N/A,N/A",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("WriteVeristatCompare() =\n%s\nwant\n%s", b.String(), strings.Join(want, "\n"))
	}
	if meta.Verifier[2].A.Error != "BPF_MOV uses reserved fields" || meta.Verifier[2].B.Error != "" {
		t.Errorf("xdp_movsx errors = %q, %q; want A's reason only", meta.Verifier[2].A.Error, meta.Verifier[2].B.Error)
	}

	// BPF CI's veristat_compare.py asserts the columns of veristat
	// --emit file,prog,verdict,states -C -o csv.
	emit, err := ParseVeristatEmit("file,prog,verdict,states")
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := writeVeristatCompare(&b, meta.Verifier, emit); err != nil {
		t.Fatal(err)
	}
	wantCI := "file_name,prog_name,verdict_base,verdict_comp,verdict_diff,total_states_base,total_states_comp,total_states_diff\n" +
		"lpmbisect,lpm_lookup/keys=random/entries=10000,success,success,MATCH,4,4,+0 (+0.00%)\n" +
		"movsx.o,xdp_lpm,success,success,MATCH,2,2,+0 (+0.00%)\n" +
		"movsx.o,xdp_movsx,failure,success,MISMATCH,0,1,+1 (+100.00%)\n" +
		"movsx.o,xdp_stop,success,failure,MISMATCH,1,0,-1 (-100.00%)\n"
	if b.String() != wantCI {
		t.Errorf("WriteVeristatCompare(--emit file,prog,verdict,states) =\n%s\nwant\n%s", b.String(), wantCI)
	}
}

func TestWriteVeristat(t *testing.T) {
	_, meta := verifierReport(t)
	var b bytes.Buffer
	if err := WriteVeristat(&b, meta.Verifier, nil); err != nil {
		t.Fatal(err)
	}
	want := "file_name,prog_name,verdict,duration,total_insns,total_states,peak_states,max_states_per_insn,max_mark_read_len,prog_size,prog_size_jited,prog_type,attach_type,stack_depth,mem_peak\n" +
		"lpmbisect,lpm_lookup/keys=random/entries=10000,success,256,49,4,4,0,3,14,96,xdp,cgroup_inet_ingress,8,N/A\n" +
		"movsx.o,xdp_lpm,success,90,30,2,2,0,1,10,60,xdp,xdp,0,N/A\n" +
		"movsx.o,xdp_movsx,failure,27,7,0,0,0,0,3,N/A,xdp,xdp,0,N/A\n" +
		"movsx.o,xdp_stop,success,40,12,1,1,0,1,4,32,xdp,xdp,0,N/A\n"
	if b.String() != want {
		t.Errorf("WriteVeristat() =\n%s\nwant\n%s", b.String(), want)
	}
	emit, err := ParseVeristatEmit("prog,insns,mark_read,stack,jited_size")
	if err == nil || !strings.Contains(err.Error(), `"jited_size" is not one of veristat's stats`) {
		t.Errorf("ParseVeristatEmit(jited_size) = %v, %v; want an error naming jited_size", emit, err)
	}
	if emit, err = ParseVeristatEmit("prog,insns,mark_read,stack"); err != nil || fmt.Sprint(emit) != "[prog_name total_insns max_mark_read_len stack_depth]" {
		t.Fatalf("ParseVeristatEmit(prog,insns,mark_read,stack) = %v, %v; want veristat's names", emit, err)
	}
	b.Reset()
	if err := WriteVeristat(&b, meta.Verifier, emit); err != nil {
		t.Fatal(err)
	}
	if want := "prog_name,total_insns,max_mark_read_len,stack_depth\nlpm_lookup/keys=random/entries=10000,49,3,8\nxdp_lpm,30,1,0\nxdp_movsx,7,0,0\nxdp_stop,12,1,0\n"; b.String() != want {
		t.Errorf("WriteVeristat(emit) =\n%s\nwant\n%s", b.String(), want)
	}
}

// TestVeristatNamesAndOrder: veristat splits its lines at every comma and
// newline and honours no quotes, and sorts by file, then program: a name
// with a comma or a quote stays one cell, and the rows come in its order.
func TestVeristatNamesAndOrder(t *testing.T) {
	side := view.VerifierSide{Present: true, Stats: map[string]float64{}}
	progs := []view.VerifierProgram{
		{File: "b.o", Program: "z", A: side},
		{File: "a,\"x\".o", Program: "p\nq", A: side},
		{File: "b.o", Program: "Y", A: side},
	}
	var b bytes.Buffer
	if err := WriteVeristat(&b, progs, []string{"file_name", "prog_name", "verdict"}); err != nil {
		t.Fatal(err)
	}
	if want := "file_name,prog_name,verdict\na_\"x\".o,p_q,success\nb.o,Y,success\nb.o,z,success\n"; b.String() != want {
		t.Errorf("WriteVeristat() =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteGitHub(t *testing.T) {
	rep, meta := verifierReport(t)
	var b bytes.Buffer
	if err := writeGitHub(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"::warning title=lpmbisect%3A Verifier/prog=xdp_movsx::Verifier/prog=xdp_movsx insns-processed: 7 insns-processed → 14 insns-processed (+100.0%25), UNKNOWN\n",
		"::notice title=lpmbisect%3A xdp_movsx starts verifying::xdp_movsx (movsx.o): B's verifier accepts it, A's rejected it: BPF_MOV uses reserved fields\n",
		"::error title=lpmbisect%3A xdp_stop stops verifying::xdp_stop (movsx.o): B's verifier rejects it, A's accepted it: R0 !read_ok\n",
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

// validateKCIDB checks a KCIDB submission as kcidb-io's validator does,
// against the schema of the version the document declares, which must be
// v4.4 (kcidbSchemaV4_4, the only one known here: kcidb-io takes a
// document without a minor for v4.0, whose tests have no number), and
// against the rules the schema states in words: an object's id is its
// origin, a colon and a local id, and, as each id must identify its object
// uniquely among those of its origin, no id twice among the objects of one
// type.
func validateKCIDB(doc []byte) []error {
	var top any
	if err := json.Unmarshal(doc, &top); err != nil {
		return []error{fmt.Errorf("not JSON: %v", err)}
	}
	errs := kcidbSchemaV4_4.validate("$", top)
	obj, _ := top.(map[string]any)
	if v, _ := obj["version"].(map[string]any); v["major"] != 4.0 || v["minor"] != 4.0 {
		errs = append(errs, fmt.Errorf("version %v.%v: want 4.4, the version of the schema checked here", v["major"], v["minor"]))
	}
	for _, kind := range []string{"checkouts", "builds", "tests"} {
		objs, _ := obj[kind].([]any)
		seen := map[string]int{}
		for i, o := range objs {
			o, _ := o.(map[string]any)
			org, _ := o["origin"].(string)
			id, _ := o["id"].(string)
			if local, ok := strings.CutPrefix(id, org+":"); !ok || local == "" {
				errs = append(errs, fmt.Errorf("%s[%d].id = %q; want its origin %q, a colon and a local id", kind, i, id, org))
			}
			if j, dup := seen[id]; dup {
				errs = append(errs, fmt.Errorf("%s[%d].id = %q, the id of %s[%d]: want ids unique", kind, i, id, kind, j))
			}
			seen[id] = i
		}
	}
	return errs
}

func TestWriteKCIDBValid(t *testing.T) {
	rep, meta := verifierReport(t)
	var b bytes.Buffer
	if err := writeKCIDB(&b, rep, meta); err != nil {
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
	byPath := map[string]kcidbTest{}
	for _, test := range doc.Tests {
		byPath[test.Path] = test
		switch {
		case strings.HasPrefix(test.Path, "lpmbisect.Verifier.prog_xdp_stop."):
			// B rejects it: one FAIL test, and no DONE test of the counts
			// where its verifier gave up.
			if test.Path != "lpmbisect.Verifier.prog_xdp_stop.load" || test.Status != "FAIL" || test.Number != nil ||
				test.Comment != "R0 !read_ok" || test.Misc["a_verdict"] != "success" {
				t.Errorf("test %+v of xdp_stop, which B rejects: want only its load, FAIL, the verifier's reason, A's verdict", test)
			}
		case test.Status != "DONE" || test.Number == nil || test.Number.Unit == "":
			t.Errorf("test %+v: want status DONE and a number with its unit", test)
		}
	}
	if test := byPath["lpmbisect.Verifier.prog_xdp_stop.load"]; test.Status != "FAIL" {
		t.Errorf("WriteKCIDB() has no FAIL test of xdp_stop's load:\n%s", b.String())
	}
	if test := byPath["lpmbisect.Verifier.prog_xdp_movsx.insns-processed"]; test.Number == nil || test.Number.Value != 14 ||
		test.Misc["change_pct"] != 100.0 || test.Misc["a_value"] != 7.0 {
		t.Errorf("xdp_movsx insns-processed: %+v; want B's 14, A's 7, +100 %%", test)
	}
	// 0 states on A, 1 on B: a change from 0 has no percentage.
	zero := byPath["lpmbisect.Verifier.prog_xdp_movsx.states-total"]
	if _, ok := zero.Misc["change_pct"]; ok || zero.Misc["a_value"] != 0.0 || zero.Misc["change_note"] == nil || zero.Number == nil || zero.Number.Value != 1 {
		t.Errorf("xdp_movsx states-total (0 → 1): %+v; want B's 1, a_value 0, no change_pct but a note", zero)
	}
}

// TestKCIDBTestIDsPerComparison: the tests of two comparisons of one
// build have ids of their own, and writing one comparison again gives the
// same ids.
func TestKCIDBTestIDsPerComparison(t *testing.T) {
	rep, meta := verifierReport(t)
	ids := func(meta view.Meta) ([]string, string) {
		var b bytes.Buffer
		if err := writeKCIDB(&b, rep, meta); err != nil {
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
	if err := writeKCIDB(&b, rep, meta); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ old, new, want string }{
		"major 3":              {`"major": 4`, `"major": 3`, "$.version.major: 4 was expected"},
		"v4.0 with numbers":    {`"minor": 4`, `"minor": 0`, "version 4.0: want 4.4"},
		"minor above 4.4":      {`"minor": 4`, `"minor": 5`, "greater than the maximum of 4"},
		"id without origin":    {`"id": "lpmbisect:391d229a7c64"`, `"id": "391d229a7c64"`, "$.checkouts[0].id"},
		"duplicate test id":    {`.prog_xdp_lpm.insns-processed",`, `.prog_xdp_lpm.insn_op",`, "want ids unique"},
		"bad status":           {`"status": "DONE"`, `"status": "OK"`, "status"},
		"no build_id":          {`"build_id": "lpmbisect:391d229a7c64",`, ``, `"build_id" is a required property`},
		"number as string":     {`"value": 14,`, `"value": "14",`, "number.value"},
		"number's prefix":      {`"unit": "insns-processed"`, `"unit": "insns-processed", "prefix": "kilo"`, "number.prefix"},
		"number's extra key":   {`"unit": "insns-processed"`, `"unit": "insns-processed", "scale": 1`, `additional property "scale"`},
		"path with slash":      {`"path": "lpmbisect.Verifier`, `"path": "lpmbisect/Verifier`, "path"},
		"origin upper case":    {`"origin": "lpmbisect"`, `"origin": "LPM"`, "origin"},
		"start time":           {`"start_time": "2026-11-30T11:00:00Z"`, `"start_time": "2026-11-30 11:00"`, "not a date-time"},
		"architecture":         {`"architecture": "x86_64"`, `"architecture": "x86-64"`, "architecture"},
		"extra top-level key":  {`"version": {`, `"extra": 1, "version": {`, `additional property "extra"`},
		"extra key of a build": {`"architecture": "x86_64"`, `"architecture": "x86_64", "arch": "x86_64"`, `$.builds[0]: additional property "arch"`},
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
// 6.12 (compare --accel icount --bench lookup,controls,verifier --workload
// examples/movsx/movsx.o: the LPM lookups and controls, every program of
// lpmbisect's and movsx's, 2 boots per side; then lpmbisect stat --format
// kcidb of its results), which kcidb-io's own validator takes for a valid
// v4.4 document, and that its test ids are its build's and unique, and
// that a change from 0 (xdp_movsx's states, which 6.1 rejects) has no
// percentage.
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
	sizes := 0
	for _, test := range parsed.Tests {
		_, pct := test.Misc["change_pct"]
		switch test.Path {
		case "lpmbisect.Verifier.prog_xdp_movsx.states-total":
			if pct || test.Misc["a_value"] != 0.0 || test.Number.Value == 0 {
				t.Errorf("xdp_movsx states 0 → %v: misc %v; want A's 0 and no change_pct", test.Number.Value, test.Misc)
			}
		case "lpmbisect.Verifier.prog_lpm_noop.prog-insns", "lpmbisect.Verifier.prog_lpm_noop.jited-bytes", "lpmbisect.Verifier.prog_lpm_noop.stack-bytes":
			if !pct || test.Number == nil {
				t.Errorf("%s: %+v; want B's value and its change", test.Path, test)
			}
			sizes++
		}
	}
	if sizes != 3 {
		t.Errorf("the document has %d of lpm_noop's size, JIT size and stack depth; want 3", sizes)
	}
	broken := strings.Replace(string(doc), `"minor": 4`, `"minor": 3`, 1)
	errs := validateKCIDB([]byte(broken))
	t.Logf("the same document as v4.3: %v", errs)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "version 4.3") {
		t.Errorf("validateKCIDB(v4.3) = %v; want one error, the version", errs)
	}
}

// TestKCIDBTestIDsOfPathsAlike: two rows whose names read alike once kept
// to a path's characters still get ids of their own.
func TestKCIDBTestIDsOfPathsAlike(t *testing.T) {
	b1 := compare.Summary{Boots: 1, Center: 1}
	rep := &compare.Report{Rows: []compare.Row{{Benchmark: "X/a=b", Unit: "u", B: b1}, {Benchmark: "X/a_b", Unit: "u", B: b1}}}
	var b bytes.Buffer
	if err := writeKCIDB(&b, rep, testMeta); err != nil {
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

package importrule

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPlan holds the module to the house's plan: every package placed,
// every import of a non-test file allowed by it, the harnesses imported by
// tests alone, the renderer by its two importers alone.
func TestPlan(t *testing.T) {
	root, module, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := planViolations(root, module, house)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range bad {
		t.Error(v)
	}
}

// TestPlanFinds checks the checker on a small module that breaks every
// rule once, and keeps what the rules allow: an import of a room below
// and of a lower layer, a test importing up and importing a harness.
func TestPlanFinds(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"go.mod":                "module example.org/m\n",
		"wire/w.go":             "package wire\nimport _ \"example.org/m/host/measure\"\n",
		"host/kernel/k.go":      "package kernel\nimport _ \"example.org/m/wire\"\n",
		"host/measure/m.go":     "package measure\nimport _ \"example.org/m/host/kernel\"\n",
		"host/measure/x.go":     "package measure\nimport _ \"example.org/m/testbed/fake\"\n",
		"host/kernel/k2.go":     "package kernel\nimport _ \"example.org/m/host/measure\"\n",
		"host/kernel/k_test.go": "package kernel\nimport (\n\t_ \"example.org/m/flow/ab\"\n\t_ \"example.org/m/testbed/fake\"\n\t_ \"example.org/m/present/report\"\n)\n",
		"flow/ab/a.go":          "package ab\nimport _ \"example.org/m/flow/bisect\"\n",
		"flow/bisect/b.go":      "package bisect\nimport _ \"example.org/m/present/report\"\n",
		"present/report/r.go":   "package report\nimport _ \"example.org/m/host/kernel\"\n",
		"testbed/fake/f.go":     "package fake\nimport _ \"example.org/m/flow/ab\"\n",
		"flow/stray/s.go":       "package stray\n",
		"cmd/tool/main.go":      "package main\nimport _ \"example.org/m/present/report\"\n",
	})
	plan := []room{
		{folder: "wire", layers: [][]pkg{{{"wire", "", nil}}}},
		{folder: "host", imports: []string{"wire"}, layers: [][]pkg{{{"host/kernel", "", nil}}, {{"host/measure", "", nil}}}},
		{folder: "present", imports: []string{"host"}, layers: [][]pkg{{{"present/report", "", []string{"cmd/tool"}}}}},
		{folder: "flow", imports: []string{"wire", "host", "present"}, layers: [][]pkg{{{"flow/ab", "", nil}, {"flow/bisect", "", nil}}}},
		{folder: "cmd", imports: []string{"present"}, layers: [][]pkg{{{"cmd/tool", "", nil}}}},
		{folder: "testbed", testsOnly: true, imports: []string{"flow"}, layers: [][]pkg{{{"testbed/fake", "", nil}}}},
	}
	got, err := planViolations(root, "example.org/m", plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"flow/ab/a.go imports flow/bisect, of its own layer 1 of flow/: siblings stay apart",
		"flow/bisect/b.go imports present/report: only cmd/tool may",
		"flow/stray is in no layer of internal/importrule's house: place it there and run its TestArchitectureDoc with -update",
		"host/kernel/k2.go imports host/measure, of layer 2 above its own 1 of host/: a stage never reaches up the flow",
		"host/kernel/k_test.go imports present/report: only cmd/tool may",
		"host/measure/x.go imports testbed/fake: a test harness, for tests only",
		"wire/w.go imports host/measure: room wire/ may import nothing of ours",
	}
	if !slices.Equal(got, want) {
		t.Errorf("planViolations() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPlanIsAHouse checks the plan itself: each room imports only rooms
// listed before it (so its floors stand, and no two rooms import each
// other), and holds only packages below its folder, each named once.
func TestPlanIsAHouse(t *testing.T) {
	for _, v := range planFaults(house) {
		t.Error(v)
	}
	broken := []room{
		{folder: "host", imports: []string{"flow"}, layers: [][]pkg{{{"host/kernel", "", nil}, {"flow/x", "", nil}}}},
		{folder: "flow", imports: []string{"host"}, layers: [][]pkg{{{"flow/ab", "", nil}}, {{"flow/ab", "", nil}}}},
	}
	want := []string{
		`room host/ may import flow/, which is not a room below it`,
		`room host/ holds flow/x, which is not below its folder`,
		`flow/ab is placed twice`,
	}
	if got := planFaults(broken); !slices.Equal(got, want) {
		t.Errorf("planFaults() = %q; want %q", got, want)
	}
}

// planFaults lists what makes plan no house.
func planFaults(plan []room) []string {
	var out []string
	seen := map[string]bool{}
	for i, r := range plan {
		for _, below := range r.imports {
			if !slices.ContainsFunc(plan[:i], func(b room) bool { return b.folder == below }) {
				out = append(out, fmt.Sprintf("room %s/ may import %s/, which is not a room below it", r.folder, below))
			}
		}
		for _, ps := range r.layers {
			for _, p := range ps {
				if p.path != r.folder && !strings.HasPrefix(p.path, r.folder+"/") {
					out = append(out, fmt.Sprintf("room %s/ holds %s, which is not below its folder", r.folder, p.path))
				}
				if seen[p.path] {
					out = append(out, fmt.Sprintf("%s is placed twice", p.path))
				}
				seen[p.path] = true
			}
		}
	}
	return out
}

// planViolations lists, sorted, the packages below root that plan does
// not place, the imports of non-test files that it does not allow, the
// harnesses imported outside tests, and the imports, tests included, of
// a package by one that its onlyImportedBy leaves out.
func planViolations(root, module string, plan []room) ([]string, error) {
	files, err := moduleFiles(root, module)
	if err != nil {
		return nil, err
	}
	at := places(plan)
	only := map[string][]string{}
	for _, r := range plan {
		for _, ps := range r.layers {
			for _, p := range ps {
				if p.onlyImportedBy != nil {
					only[p.path] = p.onlyImportedBy
				}
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		mine, placed := at[f.pkg]
		if !placed {
			if !seen[f.pkg] {
				seen[f.pkg] = true
				out = append(out, fmt.Sprintf("%s is in no layer of internal/importrule's house: place it there and run its TestArchitectureDoc with -update", f.pkg))
			}
			continue
		}
		for _, imp := range f.imports {
			if allowed, ruled := only[imp]; ruled && imp != f.pkg && !slices.Contains(allowed, f.pkg) {
				out = append(out, fmt.Sprintf("%s imports %s: only %s may", f.rel, imp, strings.Join(allowed, ", ")))
			}
			theirs, placed := at[imp]
			if f.test || !placed { // an unplaced package is reported when its own files are read
				continue
			}
			if v := importFault(plan, f.rel, imp, mine, theirs); v != "" {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// importFault says why the plan does not allow the non-test file rel, of
// a package at mine, to import imp, at theirs ("" when it does).
func importFault(plan []room, rel, imp string, mine, theirs place) string {
	r := plan[mine.room]
	switch {
	case mine.room == theirs.room && theirs.layer == mine.layer:
		return fmt.Sprintf("%s imports %s, of its own layer %d of %s/: siblings stay apart", rel, imp, mine.layer+1, r.folder)
	case mine.room == theirs.room && theirs.layer > mine.layer:
		return fmt.Sprintf("%s imports %s, of layer %d above its own %d of %s/: a stage never reaches up the flow", rel, imp, theirs.layer+1, mine.layer+1, r.folder)
	case mine.room == theirs.room:
		return ""
	case plan[theirs.room].testsOnly:
		return fmt.Sprintf("%s imports %s: a test harness, for tests only", rel, imp)
	case slices.Contains(r.imports, plan[theirs.room].folder):
		return ""
	case len(r.imports) == 0:
		return fmt.Sprintf("%s imports %s: room %s/ may import nothing of ours", rel, imp, r.folder)
	default:
		return fmt.Sprintf("%s imports %s: room %s/ may import only %s/", rel, imp, r.folder, strings.Join(r.imports, "/, "))
	}
}

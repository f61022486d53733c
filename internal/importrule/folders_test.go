package importrule

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// folders is the house's plan: the folders that show the layers, each with
// the folders its packages' non-test files may import. A package belongs
// to the longest folder of the plan that holds it. The layers above order
// packages one by one; this plan says what a reader sees in the tree:
//
//   - wire: the host–guest contract, importing nothing of ours;
//   - internal: leaves (plurals and short hashes, the atomic cache, git,
//     signals, shell quoting, the host CPU, the version stamp), importing
//     only other leaves; testbed holds the test harnesses, which
//     may import anything and are imported by tests alone;
//   - guest: what runs inside the booted kernel (its run, the benchmarks,
//     the BPF programs);
//   - stats: statistics over samples (verdicts, change points), knowing
//     nothing of kernels or QEMU;
//   - config and history: the configuration file and the nights' database;
//   - host: one boot's host path (kernel inputs, kernel builds, the
//     initramfs, QEMU, measuring, why it changed);
//   - present/view: what reports show, as data, filled by the workflows;
//   - flow: the workflows (calibration, one comparison, the campaign
//     machinery, bisections, patch series, nights, the fleet);
//   - present/report: the renderer, imported by the command and the server;
//   - present/serve: the served history (pages, JSON, triage);
//   - cmd: the programs.
var folders = map[string][]string{
	"wire":           {},
	"internal":       {"internal"},
	"testbed":        {"*"},
	"guest":          {"wire", "internal", "guest"},
	"stats":          {"wire", "internal", "stats"},
	"config":         {"wire", "internal", "stats", "config"},
	"history":        {"internal", "stats"},
	"host":           {"wire", "internal", "guest", "stats", "config", "host"},
	"present/view":   {"wire", "internal", "stats", "history", "host"},
	"flow":           {"wire", "internal", "guest", "stats", "config", "history", "host", "present/view", "flow"},
	"present/report": {"wire", "internal", "guest", "stats", "history", "host", "present/view", "flow"},
	"present/serve":  {"wire", "internal", "guest", "stats", "history", "host", "present/view", "flow", "present/report"},
	"cmd":            {"*"},
}

// folderOf is the longest folder of plan that holds pkg, or "".
func folderOf(plan map[string][]string, pkg string) string {
	best := ""
	for f := range plan {
		if (pkg == f || strings.HasPrefix(pkg, f+"/")) && len(f) > len(best) {
			best = f
		}
	}
	return best
}

func TestFolders(t *testing.T) {
	root, module, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := folderViolations(root, module, folders)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range bad {
		t.Error(v)
	}
}

// TestFoldersFind checks the folder checker: a guest package importing a
// host one, a package in no folder of the plan and a harness imported by a
// non-test file are found; a host package importing the guest's, and a
// test importing a harness, are not.
func TestFoldersFind(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"go.mod":           "module example.org/m\n",
		"guest/a/a.go":     "package a\nimport _ \"example.org/m/host/b\"\n",
		"host/b/b.go":      "package b\nimport _ \"example.org/m/guest/a\"\n",
		"host/b/b_test.go": "package b\nimport _ \"example.org/m/testbed/h\"\n",
		"host/c/c.go":      "package c\nimport _ \"example.org/m/testbed/h\"\n",
		"testbed/h/h.go":   "package h\nimport _ \"example.org/m/host/b\"\n",
		"stray/s.go":       "package s\n",
	})
	plan := map[string][]string{"guest": {"guest"}, "host": {"guest", "host"}, "testbed": {"*"}}
	got, err := folderViolations(root, "example.org/m", plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"guest/a/a.go imports host/b: folder guest may import only guest",
		"host/c/c.go imports testbed/h: a test harness, for tests only",
		"stray is in no folder of the plan: move it into one, or add its folder to internal/importrule's folders and docs/architecture.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("folderViolations() = %q; want %q", got, want)
	}
}

// folderViolations lists the imports of non-test files below root that
// the folder plan does not allow, the harnesses imported outside tests,
// and the packages in no folder of the plan, sorted.
func folderViolations(root, module string, plan map[string][]string) ([]string, error) {
	files, err := moduleFiles(root, module)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		mine := folderOf(plan, f.pkg)
		if mine == "" {
			if !seen[f.pkg] {
				seen[f.pkg] = true
				out = append(out, fmt.Sprintf("%s is in no folder of the plan: move it into one, or add its folder to internal/importrule's folders and docs/architecture.md", f.pkg))
			}
			continue
		}
		if f.test {
			continue
		}
		for _, pkg := range f.imports {
			theirs := folderOf(plan, pkg)
			switch {
			case theirs == "testbed" && mine != "testbed":
				out = append(out, fmt.Sprintf("%s imports %s: a test harness, for tests only", f.rel, pkg))
			case slices.Contains(plan[mine], "*") || slices.Contains(plan[mine], theirs):
			default:
				out = append(out, fmt.Sprintf("%s imports %s: folder %s may import only %s", f.rel, pkg, mine, strings.Join(plan[mine], ", ")))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestArchitectureDocListsEveryPackage fails when docs/architecture.md
// does not name a package that go list finds: the doc is the newcomer's
// map, and a package it omits is a room nobody was told about.
func TestArchitectureDocListsEveryPackage(t *testing.T) {
	root, module, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	listed, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	for _, missing := range undocumented(string(doc), module, strings.Fields(string(listed))) {
		t.Errorf("docs/architecture.md does not name package %s (write it as `%s` in the package map)", missing, missing)
	}
}

func TestUndocumentedFinds(t *testing.T) {
	doc := "`host/kernel` and `flow/bisect/`, but host/measure only in prose"
	got := undocumented(doc, "m", []string{"m/host/kernel", "m/flow/bisect", "m/host/measure"})
	if want := []string{"host/measure"}; !slices.Equal(got, want) {
		t.Errorf("undocumented() = %q; want %q", got, want)
	}
}

// undocumented lists the packages (import paths below module) that doc
// does not name in backquotes, with or without a trailing slash.
func undocumented(doc, module string, packages []string) []string {
	var out []string
	for _, p := range packages {
		rel, ok := strings.CutPrefix(p, module+"/")
		if !ok {
			continue
		}
		if !strings.Contains(doc, "`"+rel+"`") && !strings.Contains(doc, "`"+rel+"/`") {
			out = append(out, rel)
		}
	}
	return out
}

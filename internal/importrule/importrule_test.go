package importrule

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// onlyImportedBy maps a package of the module (its path below the module
// root) to the only packages that may import it, its own files aside.
var onlyImportedBy = map[string][]string{
	// The renderer sits at the top of the graph: domain packages return
	// data (package view), the command renders it and writes the files.
	// present/serve renders the served pages with it.
	"present/report": {"cmd/lpmbisect", "present/serve"},
}

// layers is the package map: each package of the module at its place in
// the flow. A package's non-test files may import only packages of lower
// layers, never one of its own: so the graph has no cycle, a stage never
// reaches up the flow, and siblings (fleet and bisect, report and ab)
// stay apart. docs/architecture.md draws the same map; a new package is
// placed here, or the test fails naming it.
var layers = [][]string{
	// 0: the host–guest contract, leaves, and what needs nothing of ours.
	{"wire", "internal/words", "internal/logtail", "internal/cachefile", "internal/cpuinfo", "internal/git",
		"internal/interrupt", "internal/shellquote", "internal/importrule",
		"guest/bpf", "stats/sample",
		"testbed/testkbuild", "testbed/testkernels", "testbed/testseries", "testbed/testqemu"},
	// 1: kernel inputs, the VM, the initramfs; verdicts; the guest's benchmarks.
	{"host/kernel", "host/vmrunner", "host/initramfs", "stats/compare", "guest/workloads",
		"internal/version", "stats/changepoint",
		"testbed/testpg", "testbed/testguest"},
	// 2: what builds on one of those.
	{"host/insight", "guest/agent", "config", "history", "stats/changepoint/internal/sim"},
	// 3: measuring and building; what reports show, as data.
	{"host/measure", "host/kbuild", "present/view", "config/cliflag", "stats/changepoint/internal/cpsim"},
	// 4: calibration of a host, the first workflow.
	{"flow/calibrate", "testbed/testsetup"},
	// 5: one comparison; the campaigns' bench, state and store; the
	// fleet; the renderer.
	{"flow/ab", "flow/campaign", "flow/fleet", "present/report"},
	// 6: bisections, and the campaigns' test fakes.
	{"flow/bisect", "testbed/testcampaign"},
	// 7: nights, which bisect, and patch series.
	{"flow/nightly", "flow/series"},
	// 8: the served history, over nights' history, rendered by report.
	{"present/serve"},
	// 9: the programs.
	{"cmd/lpmbisect", "cmd/lpmbisect-guest"},
}

func TestLayers(t *testing.T) {
	root, module, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := layerViolations(root, module, layers)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range bad {
		t.Error(v)
	}
}

// TestLayersFind checks the layer checker: an import up the map, one
// within a layer and a package the map does not place are found; an
// import down the map and a test's import up it are not.
func TestLayersFind(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":             "module example.org/m\n",
		"wire/wire.go":       "package wire\n",
		"measure/m.go":       "package measure\nimport _ \"example.org/m/wire\"\n",
		"measure/m_test.go":  "package measure\nimport _ \"example.org/m/nightly\"\n",
		"fleet/f.go":         "package fleet\nimport _ \"example.org/m/bisect\"\n",
		"bisect/b.go":        "package bisect\nimport _ \"example.org/m/measure\"\n",
		"wire/up.go":         "package wire\nimport _ \"example.org/m/measure\"\n",
		"stray/s.go":         "package stray\n",
		"nightly/n.go":       "package nightly\nimport _ \"example.org/m/bisect\"\n",
		"nightly/testdata/x": "",
	}
	writeTree(t, root, files)
	got, err := layerViolations(root, "example.org/m", [][]string{{"wire"}, {"measure"}, {"bisect", "fleet"}, {"nightly"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fleet/f.go imports bisect, of its own layer 2: siblings stay apart",
		"stray is in no layer of the package map: place it in internal/importrule's layers and docs/architecture.md",
		"wire/up.go imports measure, of layer 1 above its own 0: a stage never reaches up the flow",
	}
	if !slices.Equal(got, want) {
		t.Errorf("layerViolations() = %q; want %q", got, want)
	}
}

// layerViolations lists the imports of non-test files below root that
// break the layers, and the packages with Go files the layers do not
// place, sorted.
func layerViolations(root, module string, layers [][]string) ([]string, error) {
	layer := map[string]int{}
	for i, pkgs := range layers {
		for _, p := range pkgs {
			layer[p] = i
		}
	}
	files, err := moduleFiles(root, module)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		if f.test {
			continue
		}
		mine, placed := layer[f.pkg]
		if !placed {
			if !seen[f.pkg] {
				seen[f.pkg] = true
				out = append(out, fmt.Sprintf("%s is in no layer of the package map: place it in internal/importrule's layers and docs/architecture.md", f.pkg))
			}
			continue
		}
		for _, pkg := range f.imports {
			switch theirs, placed := layer[pkg]; {
			case !placed:
				// reported when its own files are walked
			case theirs == mine:
				out = append(out, fmt.Sprintf("%s imports %s, of its own layer %d: siblings stay apart", f.rel, pkg, mine))
			case theirs > mine:
				out = append(out, fmt.Sprintf("%s imports %s, of layer %d above its own %d: a stage never reaches up the flow", f.rel, pkg, theirs, mine))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// goFile is a Go file of the module as the import rules read it: its
// path and package directory below the module root (slash-separated),
// whether it is a test, and the module's packages it imports (paths below
// the module root).
type goFile struct {
	rel, pkg string
	test     bool
	imports  []string
}

// moduleFiles reads the imports of every Go file of the module below root
// (walkGo's), in the order of their paths: the one reader every rule of
// this package checks.
func moduleFiles(root, module string) ([]goFile, error) {
	var files []goFile
	fset := token.NewFileSet()
	err := walkGo(root, func(rel string) error {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		g := goFile{rel: filepath.ToSlash(rel), pkg: filepath.ToSlash(filepath.Dir(rel)), test: strings.HasSuffix(rel, "_test.go")}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if pkg, ok := strings.CutPrefix(imp, module+"/"); ok {
				g.imports = append(g.imports, pkg)
			}
		}
		files = append(files, g)
		return nil
	})
	return files, err
}

// walkGo calls fn with the path, relative to root, of every Go file of the
// module below root, skipping testdata, vendor, and dot and underscore
// directories.
func walkGo(root string, fn func(rel string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return fn(rel)
	})
}

func TestImportRule(t *testing.T) {
	root, module, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := violations(root, module, onlyImportedBy)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range bad {
		t.Error(v)
	}
}

// TestImportRuleFinds checks the checker on a module that breaks the rule
// in a package and in a test, and keeps it in the importer allowed and in
// the package's own external test.
func TestImportRuleFinds(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                   "module example.org/m\n",
		"report/report.go":         "package report\n",
		"report/x_test.go":         "package report_test\nimport _ \"example.org/m/report\"\n",
		"cmd/tool/main.go":         "package main\nimport _ \"example.org/m/report\"\n",
		"bisect/bisect.go":         "package bisect\nimport (\n\t\"fmt\"\n\t_ \"example.org/m/report\"\n)\nvar _ = fmt.Sprint\n",
		"nightly/nightly_test.go":  "package nightly\nimport r \"example.org/m/report\"\nvar _ = r.X\n",
		"nightly/testdata/skip.go": "package skip\nimport _ \"example.org/m/report\"\n",
		"reporting/reporting.go":   "package reporting\nimport _ \"example.org/m/report\"\n",
	}
	writeTree(t, root, files)
	got, err := violations(root, "example.org/m", map[string][]string{"report": {"cmd/tool"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"bisect/bisect.go imports report: only cmd/tool may",
		"nightly/nightly_test.go imports report: only cmd/tool may",
		"reporting/reporting.go imports report: only cmd/tool may",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations() = %q; want %q", got, want)
	}
}

// violations lists the files below root, the module's directory, that
// import a package of rules from a package rules does not allow, in the
// order of their paths.
func violations(root, module string, rules map[string][]string) ([]string, error) {
	files, err := moduleFiles(root, module)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		for _, pkg := range f.imports {
			allowed, ruled := rules[pkg]
			if !ruled || f.pkg == pkg || slices.Contains(allowed, f.pkg) {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s: only %s may", f.rel, pkg, strings.Join(allowed, ", ")))
		}
	}
	return out, nil
}

// moduleRoot finds the directory of go.mod above this package and the
// module path it declares.
func moduleRoot() (dir, module string, err error) {
	dir, err = os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(data)) {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", fmt.Errorf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// writeTree writes files (path below root → content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

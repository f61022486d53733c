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
	"report": {"cmd/lpmbisect"},
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
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		from := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			pkg, ok := strings.CutPrefix(imp, module+"/")
			allowed, ruled := rules[pkg]
			if !ok || !ruled || from == pkg || slices.Contains(allowed, from) {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s: only %s may", filepath.ToSlash(rel), pkg, strings.Join(allowed, ", ")))
		}
		return nil
	})
	return out, err
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

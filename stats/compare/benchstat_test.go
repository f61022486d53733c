package compare

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchproc"
)

// benchstatCells reads files exactly as cmd/benchstat does (benchfmt.Files
// with labels, a filter, then the -table, -row, -col and -ignore
// projections) and returns the values of each cell, keyed by table, row,
// column and unit. benchstat's table builder is internal; grouping by the
// same projections is what decides which values it compares.
func benchstatCells(t *testing.T, table, row, col, ignore string, paths ...string) (map[[4]string][]float64, []string) {
	t.Helper()
	filter, err := benchproc.NewFilter("*")
	if err != nil {
		t.Fatal(err)
	}
	var parser benchproc.ProjectionParser
	parse := func(name, proj string) *benchproc.Projection {
		p, err := parser.Parse(proj, filter)
		if err != nil {
			t.Fatalf("benchstat %s %q: %v", name, proj, err)
		}
		return p
	}
	tableBy, rowBy, colBy := parse("-table", table), parse("-row", row), parse("-col", col)
	parse("-ignore", ignore)
	cells := map[[4]string][]float64{}
	var cols []string
	files := benchfmt.Files{Paths: paths, AllowLabels: true}
	for files.Scan() {
		switch rec := files.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("benchstat would warn: %v", rec)
		case *benchfmt.Result:
			if ok, err := filter.Apply(rec); !ok || err != nil {
				t.Fatalf("filter * rejected %s: %v", rec.Name, err)
			}
			c := colBy.Project(rec).StringValues()
			if !slices.Contains(cols, c) {
				cols = append(cols, c)
			}
			for _, v := range rec.Values {
				k := [4]string{tableBy.Project(rec).StringValues(), rowBy.Project(rec).StringValues(), c, v.Unit}
				cells[k] = append(cells[k], v.Value)
			}
		}
	}
	if err := files.Err(); err != nil {
		t.Fatalf("benchfmt.Files(%v): %v", paths, err)
	}
	return cells, cols
}

// TestResultsFileReadByBenchstat runs benchstat's parser over real results
// files as the host writes them. With -col kernel (or -col side when both
// sides run one kernel) and the per-boot keys ignored, it sees exactly one
// table with two columns, A's kernel and B's, holding every sample that
// Build counts.
//
// benchstat's default -table is .config, every file configuration key,
// including boot: without -ignore boot (or -table ”) it prints one table
// per boot. The test checks that too, so that the command line the CLI
// suggests keeps ignoring the per-boot keys.
func TestResultsFileReadByBenchstat(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no results files in testdata: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			rep := readReport(t, path, Options{})
			col := wire.KeyKernel
			if rep.A.Kernel == rep.B.Kernel {
				col = wire.KeySide
			}
			for _, proj := range []struct{ table, ignore string }{
				{".config", "side,boot,image,pair"}, // benchstat -col kernel -ignore side,boot,image,pair
				{"", "boot,image,pair"},             // benchstat -table '' -col kernel -ignore boot,image,pair
			} {
				if col == wire.KeySide {
					proj.ignore = strings.TrimPrefix(proj.ignore, "side,")
				}
				cells, cols := benchstatCells(t, proj.table, ".fullname", col, proj.ignore, path)
				want := []string{rep.A.Kernel, rep.B.Kernel}
				if col == wire.KeySide {
					want = []string{SideA, SideB}
				}
				slices.Sort(cols)
				slices.Sort(want)
				if !slices.Equal(cols, want) {
					t.Errorf("benchstat -table %q -col %s -ignore %s %s: columns %q; want %q", proj.table, col, proj.ignore, path, cols, want)
				}
				tables := map[string]bool{}
				for k := range cells {
					tables[k[0]] = true
				}
				if len(tables) != 1 {
					t.Errorf("benchstat -table %q -col %s -ignore %s %s: %d tables; want 1", proj.table, col, proj.ignore, path, len(tables))
					continue
				}
				var table string
				for k := range tables {
					table = k
				}
				for _, row := range rep.Rows {
					for i, s := range []Summary{row.A, row.B} {
						c := []string{rep.A.Kernel, rep.B.Kernel}[i]
						if col == wire.KeySide {
							c = []string{SideA, SideB}[i]
						}
						got := len(cells[[4]string{table, row.Benchmark, c, row.Unit}])
						if got != s.Samples {
							t.Errorf("benchstat -table %q -col %s -ignore %s %s: cell %s/%s has %d values; want %d, the samples Build counts",
								proj.table, col, proj.ignore, path, row.Benchmark, c, got, s.Samples)
						}
					}
				}
			}

			perBoot, _ := benchstatCells(t, ".config", ".fullname", col, "", path)
			tables := map[string]bool{}
			for k := range perBoot {
				tables[k[0]] = true
			}
			if len(tables) < 2 {
				t.Errorf("benchstat -col %s %s (no -ignore): %d table(s); want one per boot, which is why the CLI must suggest -ignore side,boot,image,pair", col, path, len(tables))
			}
		})
	}
}

// readReport builds the comparison of a results file.
func readReport(t *testing.T, path string, opts Options) *Report {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(parse(t, string(text)), opts)
	if err != nil {
		t.Fatalf("Build(%s) = %v", path, err)
	}
	return rep
}

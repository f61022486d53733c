package ab

import (
	"path/filepath"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestRestat checks that a results file is judged again with the jitter
// bounds it recorded, that the statistical rule drops them, and that the
// metadata comes from the file.
func TestRestat(t *testing.T) {
	path := filepath.Join("..", "..", "stats", "compare", "testdata", "debian61-self-icount.txt")
	results, err := measure.ReadResultsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := compare.Options{Alpha: 0.05, MinEffect: 0.01}
	plain, err := Restat(results, path, opts, false)
	if err != nil {
		t.Fatal(err)
	}
	bounds := map[string]float64{}
	for _, row := range plain.Report.Rows {
		if row.Rule == compare.RuleDeterministic {
			t.Fatalf("%s decided by a jitter bound the file does not record", row.Benchmark)
		}
		bounds[row.Benchmark] = 0.001
	}
	results[0].SetConfig(wire.KeyJitterBounds, compare.FormatBounds(bounds))
	for _, statistical := range []bool{false, true} {
		res, err := Restat(results, path, opts, statistical)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, row := range res.Report.Rows {
			if row.Rule == compare.RuleDeterministic {
				n++
			}
		}
		if (n > 0) == statistical {
			t.Errorf("Restat(statistical %v): %d rows decided by the recorded jitter bounds", statistical, n)
		}
		m := res.Meta
		if m.ResultsFile != path || res.Results != path || m.Accel != results[0].GetConfig(wire.KeyAccel) || m.Accel == "" ||
			m.A.Release != res.Report.A.Kernel || m.B.Release == "" {
			t.Errorf("Restat meta = %+v; want the file, its accelerator and both releases", m)
		}
	}
	results[0].SetConfig(wire.KeyJitterBounds, "not bounds")
	if _, err := Restat(results, path, opts, false); err == nil {
		t.Errorf("Restat with malformed jitter bounds: no error")
	}
}

package view

import (
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestVerifiersFiles checks whose object each verifier row is: lpmbisect's
// own programs (by name, whatever their parts), the --workload object's,
// or an unknown workload's when a results file comes without the object.
func TestVerifiersFiles(t *testing.T) {
	row := func(name string) compare.Row {
		return compare.Row{Benchmark: name, Unit: wire.UnitVerdict, A: compare.Summary{Boots: 1, Center: 1}}
	}
	rows := []compare.Row{row("Verifier/prog=lpm_noop"), row("Verifier/prog=hash_lookup/map=lru_hash/key_size=4/entries=100"), row("Verifier/prog=xdp_main")}
	own := []string{"lpm_noop", "hash_lookup"}
	for _, c := range []struct {
		w    Workload
		want []string
	}{
		{Workload{Own: own}, []string{ownObject, ownObject, unknownWorkload}},
		{Workload{Own: own, File: "prog.o", Programs: []string{"xdp_main"}}, []string{ownObject, ownObject, "prog.o"}},
	} {
		got := Verifiers(rows, nil, c.w)
		if len(got) != 3 {
			t.Fatalf("Verifiers(%+v) = %d programs; want 3", c.w, len(got))
		}
		for i, p := range got {
			if p.File != c.want[i] {
				t.Errorf("Verifiers(%+v)[%s].File = %q; want %q", c.w, p.Benchmark, p.File, c.want[i])
			}
		}
		if got[1].Program != "hash_lookup/map=lru_hash/key_size=4/entries=100" {
			t.Errorf("Program of a variant row = %q; want the row's name after the prefix", got[1].Program)
		}
	}
}

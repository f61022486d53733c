package insight

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// syntheticTables are two symbol tables that exercise every rule of the
// size diff: clone suffixes renumbered between builds, .cold parts,
// statics of one name in several files, generated symbols, __pfx_
// padding, data, zero sizes and ties in the sort.
func syntheticTables() (old, new *Symbols) {
	at := uint64(0xffffffff81000000)
	table := func(entries ...Symbol) *Symbols {
		for i := range entries {
			entries[i].Addr = at
			at += 0x1000
		}
		s := newSymbols(SourceVmlinux, entries)
		s.ExactSizes = true
		return s
	}
	old = table(
		Symbol{Name: "trie_lookup_elem", Size: 179, Type: 't'},
		Symbol{Name: "longest_prefix_match.isra.0", Size: 302, Type: 't'},
		Symbol{Name: "trie_update_elem", Size: 949, Type: 't'},
		Symbol{Name: "trie_update_elem.cold", Size: 20, Type: 't'},
		Symbol{Name: "bpf_map_update_value.isra.0", Size: 571, Type: 't'},
		Symbol{Name: "trie_alloc.constprop.0", Size: 237, Type: 't'},
		Symbol{Name: "helper", Size: 10, Type: 't'},          // static in two files:
		Symbol{Name: "helper", Size: 12, Type: 't'},          // summed
		Symbol{Name: "trie_rebalance", Size: 300, Type: 't'}, // fib_trie.c
		Symbol{Name: "trie_map_ops", Size: 328, Type: 'D'},
		Symbol{Name: "__key.12345", Size: 8, Type: 'b'},
		Symbol{Name: "gone_fn", Size: 50, Type: 'T'},
		Symbol{Name: "same_fn", Size: 64, Type: 'T'},
		Symbol{Name: "tie_a", Size: 10, Type: 't'},
		Symbol{Name: "tie_b", Size: 10, Type: 't'},
		Symbol{Name: "weak_fn", Size: 30, Type: 'W'},
		Symbol{Name: "__mod_pci__device_table", Size: 40, Type: 'r'},
		Symbol{Name: "no_size", Size: 0, Type: 't'},
	)
	new = table(
		Symbol{Name: "__pfx_trie_lookup_elem", Size: 16, Type: 't'},
		Symbol{Name: "trie_lookup_elem", Size: 534, Type: 't'},
		Symbol{Name: "__pfx_longest_prefix_match.isra.1", Size: 16, Type: 't'},
		Symbol{Name: "longest_prefix_match.isra.1", Size: 313, Type: 't'},
		Symbol{Name: "trie_update_elem", Size: 954, Type: 't'},
		Symbol{Name: "bpf_map_update_value", Size: 549, Type: 't'},
		Symbol{Name: "trie_alloc.constprop.3", Size: 170, Type: 't'},
		Symbol{Name: "trie_mem_usage", Size: 40, Type: 't'},
		Symbol{Name: "helper", Size: 30, Type: 't'},
		Symbol{Name: "trie_rebalance", Size: 310, Type: 't'},
		Symbol{Name: "trie_map_ops", Size: 344, Type: 'D'},
		Symbol{Name: "__key.999", Size: 16, Type: 'b'},
		Symbol{Name: "same_fn", Size: 64, Type: 'T'},
		Symbol{Name: "tie_a", Size: 20, Type: 't'},
		Symbol{Name: "tie_b", Size: 20, Type: 't'},
		Symbol{Name: "new_fn", Size: 10, Type: 'T'},
		Symbol{Name: "weak_fn", Size: 30, Type: 'W'},
		Symbol{Name: "__se_sys_bpf", Size: 24, Type: 'T'},
		Symbol{Name: "linux_banner", Size: 200, Type: 'R'},
		Symbol{Name: "odd:name", Size: 5, Type: 't'},
	)
	return old, new
}

// TestDiffSizesGolden checks the size diff and its bloat-o-meter text on
// the synthetic tables: with the default selection (the code under test,
// functions, no padding), as bloat-o-meter -t and as bloat-o-meter.
func TestDiffSizesGolden(t *testing.T) {
	all := regexp.MustCompile(`.*`)
	old, new := syntheticTables()
	for _, tc := range []struct {
		file   string
		opts   sizeOptions
		header string
	}{
		{"sizes-default.golden", sizeOptions{}, "Function"},
		{"sizes-functions.golden", sizeOptions{Symbols: all, Types: TypesFunctions, KeepPadding: true}, "Function"},
		{"sizes-all.golden", sizeOptions{Symbols: all, Types: typesAll, KeepPadding: true}, "Function"},
	} {
		var b strings.Builder
		if err := WriteBloatOMeter(&b, diffSizes(old, new, tc.opts), tc.header); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, b.String())
	}
}

// TestDiffSizesCounts checks the counting itself, independent of the
// golden text.
func TestDiffSizesCounts(t *testing.T) {
	old, new := syntheticTables()
	d := diffSizes(old, new, sizeOptions{})
	rows := map[string]SizeRow{}
	for _, r := range d.Rows {
		rows[r.Name] = r
	}
	for name, want := range map[string]SizeRow{
		"trie_lookup_elem":          {Name: "trie_lookup_elem", Old: 179, New: 534, InOld: true, InNew: true, Delta: 355},
		"longest_prefix_match.isra": {Name: "longest_prefix_match.isra", Old: 302, New: 313, InOld: true, InNew: true, Delta: 11},
		"trie_update_elem.cold":     {Name: "trie_update_elem.cold", Old: 20, InOld: true, Delta: -20},
		"trie_alloc.constprop":      {Name: "trie_alloc.constprop", Old: 237, New: 170, InOld: true, InNew: true, Delta: -67},
		"trie_mem_usage":            {Name: "trie_mem_usage", New: 40, InNew: true, Delta: 40},
	} {
		if got := rows[name]; got != want {
			t.Errorf("DiffSizes row %s = %+v; want %+v", name, got, want)
		}
	}
	for _, name := range []string{"trie_rebalance", "__pfx_trie_lookup_elem", "trie_map_ops", "helper"} {
		if _, ok := rows[name]; ok {
			t.Errorf("DiffSizes with the default selection has a row %s; want it left out", name)
		}
	}
	// bpf_map_update_value.isra (571) went, bpf_map_update_value (549) came.
	if d.Added != 2 || d.Removed != 2 || d.Grew != 3 || d.Shrank != 1 {
		t.Errorf("DiffSizes add/remove %d/%d grow/shrink %d/%d; want 2/2 3/1", d.Added, d.Removed, d.Grew, d.Shrank)
	}
	if d.Before != 179+302+949+20+571+237 || d.After != 534+313+954+549+170+40 {
		t.Errorf("DiffSizes totals %d → %d; want %d → %d", d.Before, d.After, 179+302+949+20+571+237, 534+313+954+549+170+40)
	}

	all := diffSizes(old, new, sizeOptions{Symbols: regexp.MustCompile(`.*`), Types: typesAll})
	for _, r := range all.Rows {
		switch r.Name {
		case "helper":
			if r.Old != 22 || r.New != 30 {
				t.Errorf("helper (static in two files) = %d → %d; want the sum 22 → 30", r.Old, r.New)
			}
		case "__key":
			if r.Old != 8 || r.New != 16 {
				t.Errorf("__key.NNN = %d → %d; want 8 → 16 under one name", r.Old, r.New)
			}
		case "__se_sys_bpf", "linux_banner", "odd:name", "__mod_pci__device_table", "no_size", "same_fn":
			t.Errorf("DiffSizes(all) has a row %s; bloat-o-meter skips it", r.Name)
		}
		if strings.HasPrefix(r.Name, paddingPrefix) {
			t.Errorf("DiffSizes without KeepPadding has a row %s", r.Name)
		}
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"longest_prefix_match.isra.0":       "longest_prefix_match.isra",
		"foo.constprop.0.isra.0":            "foo.constprop.isra",
		"trie_update_elem.cold":             "trie_update_elem.cold",
		"__key.12345":                       "__key",
		"bpf_map_update_value.part.0":       "bpf_map_update_value.part",
		"x.123abc":                          "xabc", // as bloat-o-meter's re.sub does
		"trie_lookup_elem":                  "trie_lookup_elem",
		"__pfx_longest_prefix_match.isra.0": "__pfx_longest_prefix_match.isra",
	} {
		if got := normalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestDefaultSymbols(t *testing.T) {
	re := regexp.MustCompile(defaultSymbols)
	for _, name := range []string{
		"trie_lookup_elem", "trie_update_elem", "trie_delete_elem", "trie_get_next_key",
		"trie_alloc", "trie_free", "trie_check_btf", "trie_mem_usage",
		"longest_prefix_match.isra", "__longest_prefix_match", "lpm_trie_node_alloc",
		"trie_update_elem.cold", "bpf_map_update_value.isra", "__sys_bpf", "map_update_elem",
		"bpf_map_lookup_elem", "generic_map_lookup_batch",
	} {
		if !re.MatchString(name) {
			t.Errorf("DefaultSymbols does not match %s", name)
		}
	}
	for _, name := range []string{"trie_rebalance", "fib_trie_table", "__pfx_trie_lookup_elem", "htab_map_lookup_elem", "bpf_map_put", "trie_lookup_elem_x"} {
		if re.MatchString(name) {
			t.Errorf("DefaultSymbols matches %s; want it left out", name)
		}
	}
}

// TestDiffSizesAgainstBloatOMeter runs the kernel's own
// scripts/bloat-o-meter, when $LPMBISECT_BLOAT_O_METER names it (it is in
// every kernel tree, e.g. Debian's linux-source-6.12), on ELF files made
// from the synthetic tables, and compares its output with
// WriteBloatOMeter's byte for byte, in its three modes.
func TestDiffSizesAgainstBloatOMeter(t *testing.T) {
	script := os.Getenv("LPMBISECT_BLOAT_O_METER")
	if script == "" {
		t.Skip("set LPMBISECT_BLOAT_O_METER to a kernel tree's scripts/bloat-o-meter to run it")
	}
	old, new := syntheticTables()
	dir := t.TempDir()
	files := map[*Symbols]string{old: filepath.Join(dir, "old"), new: filepath.Join(dir, "new")}
	for s, path := range files {
		var syms []testSym
		for _, sym := range s.All() {
			ts := testSym{Name: sym.Name, Size: sym.Size, Global: sym.Type >= 'A' && sym.Type <= 'Z'}
			switch sym.Type {
			case 'W':
				ts.Global, ts.Weak = false, true
			case 'd', 'D':
				ts.Section, ts.Type = ".data", elf.STT_OBJECT
			case 'b', 'B':
				ts.Section, ts.Type = ".bss", elf.STT_OBJECT
			case 'r', 'R':
				ts.Section, ts.Type = "__ksymtab", elf.STT_OBJECT
			}
			syms = append(syms, ts)
		}
		writeTestELF(t, path, make([]byte, 256), x86TextAddr, nil, syms)
	}
	readBack := func(path string) *Symbols {
		s, err := readVmlinux(path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := readBack(files[old]), readBack(files[new])
	all := regexp.MustCompile(`.*`)
	for _, tc := range []struct {
		flag  string
		types string
	}{{"", typesAll}, {"-t", TypesFunctions}} {
		args := []string{script}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		out, err := exec.Command("python3", append(args, files[old], files[new])...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		var got strings.Builder
		WriteBloatOMeter(&got, diffSizes(a, b, sizeOptions{Symbols: all, Types: tc.types, KeepPadding: true}), "Function")
		if got.String() != string(out) {
			t.Errorf("WriteBloatOMeter(%s):\n%s\nbloat-o-meter %s:\n%s", tc.types, got.String(), tc.flag, out)
		}
	}
}

// TestResizeSavedBlock checks that a block saved and read again draws its
// size table over other functions exactly as diffSizes does from the
// symbol tables, and says so when it kept no sizes.
func TestResizeSavedBlock(t *testing.T) {
	old, new := syntheticTables()
	d := &Diff{
		A:     &Side{Symbols: old, FunctionSizes: functionSizes(old)},
		B:     &Side{Symbols: new, FunctionSizes: functionSizes(new)},
		Sizes: diffSizes(old, new, sizeOptions{}),
	}
	path := DiffFile(filepath.Join(t.TempDir(), "results.txt"))
	if err := WriteDiffFile(path, d); err != nil {
		t.Fatal(err)
	}
	saved, err := ReadDiffFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []*regexp.Regexp{nil, regexp.MustCompile(`.`), regexp.MustCompile(`^(helper|tie_.*)$`)} {
		if err := saved.Resize(re); err != nil {
			t.Fatalf("Resize(%v) = %v", re, err)
		}
		var got, want strings.Builder
		WriteBloatOMeter(&got, saved.Sizes, "Function")
		WriteBloatOMeter(&want, diffSizes(old, new, sizeOptions{Symbols: re}), "Function")
		if got.String() != want.String() {
			t.Errorf("Resize(%v) of a saved block:\n%s\nwant, as from the symbols:\n%s", re, got.String(), want.String())
		}
		if re != nil && re.String() == "." && len(saved.Sizes.Rows) <= len(d.Sizes.Rows) {
			t.Errorf("Resize(all functions): %d rows; want more than the default's %d", len(saved.Sizes.Rows), len(d.Sizes.Rows))
		}
	}
	narrow := &Diff{A: &Side{Symbols: old}, B: &Side{Symbols: new}, Sizes: d.Sizes}
	if err := narrow.Resize(regexp.MustCompile(`.`)); !errors.Is(err, ErrSizesNotKept) || narrow.Sizes != d.Sizes {
		t.Errorf("Resize of a block without function sizes = %v; want ErrSizesNotKept and the table as it was", err)
	}
}

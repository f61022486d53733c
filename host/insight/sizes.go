package insight

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// defaultSymbols selects the code under test for the size diff: the
// functions of kernel/bpf/lpm_trie.c (6.1–6.12: the map ops trie_*, the
// out-of-line longest_prefix_match clones, lpm_trie_node_alloc) and the
// map core that a lookup, update or delete from the bpf(2) syscall or a BPF
// helper goes through (kernel/bpf/syscall.c, helpers.c). It is matched
// against names after the clone-number normalisation (".isra.0" →
// ".isra"), so clones and .cold parts of these functions are in.
//
// The lpm_trie.c functions are listed one by one rather than as "trie_.*":
// net/ipv4/fib_trie.c has static trie_* functions of its own.
const defaultSymbols = `^(` +
	`trie_(lookup|update|delete)_elem|trie_(get_next_key|alloc|free|check_btf|mem_usage|check_add_elem)|` +
	`(__)?longest_prefix_match|lpm_trie_node_alloc|` +
	`map_(lookup|update|delete|lookup_and_delete)_elem|map_get_next_key|` +
	`bpf_map_(lookup|update|delete)_elem|bpf_map_(copy|update)_value|bpf_map_value_size|bpf_map_do_batch|` +
	`generic_map_(lookup|update|delete|lookup_and_delete)_batch|__sys_bpf` +
	`)(\.[a-z_]+)*$`

// defaultFunctions are the functions whose calls Compare lists.
var defaultFunctions = []string{"trie_lookup_elem", "trie_update_elem", "trie_delete_elem"}

// Symbol type sets of scripts/bloat-o-meter (nm letters).
const (
	// TypesFunctions is bloat-o-meter -t, and the default here.
	TypesFunctions = "tTwW"
	// typesAll is bloat-o-meter without options: code and data.
	typesAll = "tTdDbBrRvVwW"
)

// sizeOptions selects the symbols a size diff counts.
type sizeOptions struct {
	// Symbols, matched against normalised names; nil means defaultSymbols.
	Symbols *regexp.Regexp
	// Types are the nm type letters counted; "" means TypesFunctions.
	Types string
	// KeepPadding counts the __pfx_ padding symbols of Linux 6.2+, as
	// bloat-o-meter does. By default they are left out: each is the 16
	// bytes of padding before a function (CONFIG_CALL_PADDING), which
	// tells nothing about the code and adds a row per function new in B.
	KeepPadding bool
}

var defaultSymbolsRE = regexp.MustCompile(defaultSymbols)

// cloneNumber is bloat-o-meter's re_NUMBER: "statics and some other
// optimizations adds random .NUMBER".
var cloneNumber = regexp.MustCompile(`\.[0-9]+`)

// normalizeName removes the numbers that GCC and the linker append to
// clones and statics (".isra.0", ".constprop.1", "__key.12345"), as
// bloat-o-meter does, so that one function keeps one name across builds.
func normalizeName(name string) string {
	return cloneNumber.ReplaceAllString(name, "")
}

// SizeRow is one line of a size diff: a normalised name whose size changed.
type SizeRow struct {
	Name string `json:"name"`
	// Old and New are the summed sizes of the symbols with this
	// normalised name; InOld and InNew say whether it exists on a side
	// (bloat-o-meter prints "-" otherwise).
	Old   uint64 `json:"old"`
	New   uint64 `json:"new"`
	InOld bool   `json:"in_old"`
	InNew bool   `json:"in_new"`
	Delta int64  `json:"delta"`
}

// SizeDiff is a comparison of symbol sizes like scripts/bloat-o-meter's.
type SizeDiff struct {
	// Symbols and Types are the selection applied.
	Symbols     string `json:"symbols"`
	Types       string `json:"types"`
	KeepPadding bool   `json:"keep_padding,omitempty"`
	// Exact is set when both sides have exact (ELF) sizes.
	Exact bool `json:"exact"`

	Added   int `json:"added"`
	Removed int `json:"removed"`
	Grew    int `json:"grew"`
	Shrank  int `json:"shrank"`
	// Up is the bytes added and grown, Down the bytes removed and shrunk
	// (positive; bloat-o-meter prints it negated).
	Up   int64 `json:"up"`
	Down int64 `json:"down"`
	// Rows are the names whose size changed, largest growth first (as
	// bloat-o-meter sorts them: by delta, then name, both descending).
	Rows []SizeRow `json:"rows"`
	// Before and After are the total sizes of the selected symbols.
	Before uint64 `json:"before"`
	After  uint64 `json:"after"`
}

// ChangePercent is (After−Before)/Before in percent, 0 when Before is 0.
func (d *SizeDiff) ChangePercent() float64 {
	if d.Before == 0 {
		return 0
	}
	return float64(int64(d.After)-int64(d.Before)) * 100 / float64(d.Before)
}

// diffSizes compares the sizes of the selected symbols of two tables with
// scripts/bloat-o-meter's rules: symbols of size 0 are not counted (nm
// --size-sort omits them), nor names with ':', nor the generated symbols
// bloat-o-meter skips (__mod_*, __se_sys*, __se_compat_sys*,
// __addressable_*, linux_banner, vermagic); names are normalised with
// normalizeName and the sizes of equal names summed (statics of several
// files, or a function and its clones with the same suffix).
//
// The one difference, unless opts.KeepPadding: __pfx_ symbols are left out.
func diffSizes(old, new *Symbols, opts sizeOptions) *SizeDiff {
	re := opts.Symbols
	if re == nil {
		re = defaultSymbolsRE
	}
	types := opts.Types
	if types == "" {
		types = TypesFunctions
	}
	d := &SizeDiff{
		Symbols: re.String(), Types: types, KeepPadding: opts.KeepPadding,
		Exact: old.ExactSizes && new.ExactSizes,
	}
	d.count(sizesByName(old, re, types, opts.KeepPadding), sizesByName(new, re, types, opts.KeepPadding))
	return d
}

// functionSizes are the sizes of every function of s as the size diff
// counts them (TypesFunctions, no __pfx_ padding, bloat-o-meter's skips,
// names normalised and summed): what a saved insight block keeps so that
// its size table can be drawn again over other symbols (Diff.Resize).
func functionSizes(s *Symbols) map[string]uint64 {
	return sizesByName(s, matchEverything, TypesFunctions, false)
}

var matchEverything = regexp.MustCompile(``)

// ErrSizesNotKept is returned by Diff.Resize when a saved block lacks the
// function sizes of a side (a side without symbols, or a block written
// before they were kept).
var ErrSizesNotKept = errors.New("the saved insight block keeps no function sizes")

// Resize draws the size table again over the functions matching re (nil:
// defaultSymbols), from the function sizes each side keeps
// (Side.FunctionSizes): a saved block can then be shown over a wider or
// narrower set than when it was made. Without them (ErrSizesNotKept) the
// table stays as it was.
func (d *Diff) Resize(re *regexp.Regexp) error {
	if d.A == nil || d.B == nil || d.A.FunctionSizes == nil || d.B.FunctionSizes == nil || d.A.Symbols == nil || d.B.Symbols == nil {
		return ErrSizesNotKept
	}
	if re == nil {
		re = defaultSymbolsRE
	}
	pick := func(all map[string]uint64) map[string]uint64 {
		out := map[string]uint64{}
		for name, size := range all {
			if re.MatchString(name) {
				out[name] = size
			}
		}
		return out
	}
	sd := &SizeDiff{Symbols: re.String(), Types: TypesFunctions, Exact: d.A.Symbols.ExactSizes && d.B.Symbols.ExactSizes}
	sd.count(pick(d.A.FunctionSizes), pick(d.B.FunctionSizes))
	d.Sizes = sd
	return nil
}

// count fills d from the sizes by normalised name of the old and new
// side, with bloat-o-meter's counting and order.
func (d *SizeDiff) count(o, n map[string]uint64) {
	for name, size := range o {
		d.Before += size
		ns, common := n[name]
		row := SizeRow{Name: name, Old: size, InOld: true, New: ns, InNew: common, Delta: int64(ns) - int64(size)}
		switch {
		case !common:
			d.Removed++
			d.Down += int64(size)
		case row.Delta > 0:
			d.Grew++
			d.Up += row.Delta
		case row.Delta < 0:
			d.Shrank++
			d.Down -= row.Delta
		}
		if row.Delta != 0 {
			d.Rows = append(d.Rows, row)
		}
	}
	for name, size := range n {
		d.After += size
		if _, common := o[name]; !common {
			d.Added++
			d.Up += int64(size)
			d.Rows = append(d.Rows, SizeRow{Name: name, New: size, InNew: true, Delta: int64(size)})
		}
	}
	slices.SortFunc(d.Rows, func(a, b SizeRow) int {
		if c := cmp.Compare(b.Delta, a.Delta); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
}

// skippedByBloatOMeter lists the generated symbols bloat-o-meter ignores.
func skippedByBloatOMeter(name string) bool {
	for _, p := range []string{"__mod_", "__se_sys", "__se_compat_sys", "__addressable_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "linux_banner" || name == "vermagic"
}

func sizesByName(s *Symbols, re *regexp.Regexp, types string, keepPadding bool) map[string]uint64 {
	sizes := make(map[string]uint64)
	for _, sym := range s.All() {
		if sym.Size == 0 || strings.IndexByte(types, sym.Type) < 0 ||
			strings.Contains(sym.Name, ":") || skippedByBloatOMeter(sym.Name) {
			continue
		}
		if !keepPadding && strings.HasPrefix(sym.Name, paddingPrefix) {
			continue
		}
		name := normalizeName(sym.Name)
		if !re.MatchString(name) {
			continue
		}
		sizes[name] += sym.Size
	}
	return sizes
}

// WriteBloatOMeter writes d in scripts/bloat-o-meter's output format, with
// header as the first column's title ("Function" for code):
//
//	add/remove: 0/0 grow/shrink: 1/0 up/down: 355/0 (355)
//	Function                                     old     new   delta
//	trie_lookup_elem                             179     534    +355
//	Total: Before=179, After=534, chg +198.32%
func WriteBloatOMeter(w io.Writer, d *SizeDiff, header string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "add/remove: %d/%d grow/shrink: %d/%d up/down: %d/%d (%d)\n",
		d.Added, d.Removed, d.Grew, d.Shrank, d.Up, -d.Down, d.Up-d.Down)
	fmt.Fprintf(&b, "%-40s %7s %7s %7s\n", header, "old", "new", "delta")
	for _, r := range d.Rows {
		fmt.Fprintf(&b, "%-40s %7s %7s %+7d\n", r.Name, sizeCell(r.Old, r.InOld), sizeCell(r.New, r.InNew), r.Delta)
	}
	fmt.Fprintf(&b, "Total: Before=%d, After=%d, chg %+.2f%%\n", d.Before, d.After, d.ChangePercent())
	_, err := io.WriteString(w, b.String())
	return err
}

func sizeCell(v uint64, present bool) string {
	if !present {
		return "-"
	}
	return fmt.Sprint(v)
}

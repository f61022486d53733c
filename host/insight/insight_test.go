package insight

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// TestCompareDebian is the insight block of Debian 6.1 against 6.12 with
// the captured kallsyms: the motivating change, and approximate sizes
// said as such.
func TestCompareDebian(t *testing.T) {
	load := func(pkg string) *Side {
		ks, err := os.ReadFile(filepath.Join("testdata", kallsymsFiles[pkg]))
		if err != nil {
			t.Fatal(err)
		}
		s := Load(Input{Image: debianImage(t, pkg), Kallsyms: ks}, Options{})
		if s.Status != "" || s.Source != "kallsyms (approximate sizes)" {
			t.Fatalf("Load(%s) = source %q, status %q; want kallsyms, no status", pkg, s.Source, s.Status)
		}
		return s
	}
	a, b := load(testkernels.Debian61), load(testkernels.Debian612)
	if a.Image.BuildID != buildID61 || b.Image.BuildID != buildID612 {
		t.Errorf("Load: image build IDs %s, %s; want %s, %s", a.Image.BuildID, b.Image.BuildID, buildID61, buildID612)
	}
	d := Compare(a, b, Options{})
	var lines []string
	for _, c := range d.CallChanges {
		lines = append(lines, c.Line)
	}
	want := "trie_lookup_elem no longer calls longest_prefix_match.isra.0 (inlined; ~192 → ~544 bytes)"
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("Compare(6.1, 6.12) call changes = %q; want [%q]", lines, want)
	}
	if d.Sizes == nil || d.Sizes.Exact {
		t.Fatalf("Compare(6.1, 6.12).Sizes = %+v; want an approximate size diff", d.Sizes)
	}
	var row SizeRow
	for _, r := range d.Sizes.Rows {
		if r.Name == "trie_lookup_elem" {
			row = r
		}
	}
	if row.Old != 192 || row.New != 544 || row.Delta != 352 {
		t.Errorf("size row trie_lookup_elem = %+v; want 192 → 544, +352", row)
	}
	if len(d.Notes) == 0 || !strings.Contains(d.Notes[0], "sizes of A and B are approximate") {
		t.Errorf("Compare notes = %q; want one saying the sizes are approximate", d.Notes)
	}
}

// fakeDebugDeb writes a Debian package holding
// usr/lib/debug/boot/vmlinux-<release> with the given contents, as the
// -dbg packages do (an uncompressed data.tar, which dpkg accepts).
func fakeDebugDeb(t *testing.T, path, release string, vmlinux []byte) {
	t.Helper()
	var data bytes.Buffer
	tw := tar.NewWriter(&data)
	for _, dir := range []string{"./", "./usr/", "./usr/lib/", "./usr/lib/debug/", "./usr/lib/debug/boot/"} {
		tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755})
	}
	tw.WriteHeader(&tar.Header{Name: "./usr/lib/debug/boot/System.map-" + release, Typeflag: tar.TypeReg, Mode: 0o644, Size: 3})
	tw.Write([]byte("map"))
	tw.WriteHeader(&tar.Header{Name: "./usr/lib/debug/boot/vmlinux-" + release, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(vmlinux))})
	tw.Write(vmlinux)
	tw.Close()
	var deb bytes.Buffer
	deb.WriteString("!<arch>\n")
	member := func(name string, body []byte) {
		fmt.Fprintf(&deb, "%-16s%-12s%-6s%-6s%-8s%-10d`\n", name, "0", "0", "0", "100644", len(body))
		deb.Write(body)
		if len(body)%2 == 1 {
			deb.WriteByte('\n')
		}
	}
	member("debian-binary", []byte("2.0\n"))
	member("control.tar", make([]byte, 1024))
	member("data.tar", data.Bytes())
	if err := os.WriteFile(path, deb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadSources checks the choice of symbol source, the build ID
// pairing and the one-line statuses, on synthetic files.
func TestLoadSources(t *testing.T) {
	dir := t.TempDir()
	code := make([]byte, 64)
	fn := []testSym{{Name: "trie_lookup_elem", Size: 32}}
	image := filepath.Join(dir, "image") // the "image": an ELF, so it is read in place
	writeTestELF(t, image, code, x86TextAddr, []byte{0xaa}, nil)
	same := filepath.Join(dir, "vmlinux-same")
	writeTestELF(t, same, code, x86TextAddr, []byte{0xaa}, fn)
	other := filepath.Join(dir, "vmlinux-other")
	writeTestELF(t, other, code, x86TextAddr, []byte{0xbb}, fn)
	otherELF, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	sameELF, err := os.ReadFile(same)
	if err != nil {
		t.Fatal(err)
	}
	goodDeb := filepath.Join(dir, "linux-image-1.0-dbg.deb")
	fakeDebugDeb(t, goodDeb, "1.0", sameELF)
	badDeb := filepath.Join(dir, "linux-image-2.0-dbg.deb")
	fakeDebugDeb(t, badDeb, "2.0", otherELF)
	kallsyms := []byte("ffffffff81000000 T _text\nffffffff81000000 t trie_lookup_elem\nffffffff81000040 T _etext\n")
	opts := Options{CacheDir: filepath.Join(dir, "cache")}

	for _, tc := range []struct {
		name     string
		in       Input
		source   string
		status   string // a prefix
		problems int
		err      error
	}{
		{"vmlinux", Input{Image: image, Vmlinux: same}, "vmlinux (exact sizes)", "", 0, nil},
		{"debug package", Input{Image: image, DebugPackage: goodDeb}, "debug package (exact sizes)", "", 0, nil},
		{"debug package again, from the cache", Input{Image: image, DebugPackage: goodDeb}, "debug package (exact sizes)", "", 0, nil},
		{"kallsyms", Input{Image: image, Kallsyms: kallsyms}, "kallsyms (approximate sizes)", "", 0, nil},
		{"vmlinux alone, its own code", Input{Vmlinux: same}, "vmlinux (exact sizes)", "", 0, nil},
		{"vmlinux over kallsyms", Input{Image: image, Vmlinux: same, Kallsyms: kallsyms}, "vmlinux (exact sizes)", "", 0, nil},
		{"debug package of another build", Input{Image: image, DebugPackage: badDeb}, "", "no symbols: debug package", 1, ErrBuildIDMismatch},
		{"vmlinux of another build, kallsyms stands in", Input{Image: image, Vmlinux: other, Kallsyms: kallsyms}, "kallsyms (approximate sizes)", "", 1, nil},
		{"stripped vmlinux", Input{Image: image, Vmlinux: image}, "", "no symbols: read symbols", 1, ErrNoSymbols},
		{"nothing", Input{Image: image}, "", "no symbols: no vmlinux, debug package or kallsyms for this kernel", 0, ErrNoSymbols},
		{"hidden kallsyms", Input{Image: image, Kallsyms: []byte("0000000000000000 T _text\n")}, "", "no symbols: parse kallsyms", 1, ErrAddressesHidden},
		{"an image it cannot read, the vmlinux's code", Input{Image: filepath.Join(dir, "missing"), Vmlinux: same}, "vmlinux (exact sizes)", "", 0, nil},
		{"symbols without code", Input{Image: filepath.Join(dir, "missing"), Kallsyms: kallsyms}, "kallsyms (approximate sizes)", "no code: open image", 0, nil},
	} {
		s := Load(tc.in, opts)
		if s.Source != tc.source || !strings.HasPrefix(s.Status, tc.status) || (tc.status == "" && s.Status != "") || len(s.Problems) != tc.problems {
			t.Errorf("Load(%s) = source %q, status %q, problems %q; want %q, %q…, %d problems", tc.name, s.Source, s.Status, s.Problems, tc.source, tc.status, tc.problems)
		}
		if tc.err != nil && !errors.Is(s.Err, tc.err) {
			t.Errorf("Load(%s).Err = %v; want %v", tc.name, s.Err, tc.err)
		}
		if strings.Contains(s.Status, "\n") {
			t.Errorf("Load(%s).Status has several lines: %q", tc.name, s.Status)
		}
		if len(s.Calls) != len(defaultFunctions) {
			t.Errorf("Load(%s) lists calls of %d functions; want %d", tc.name, len(s.Calls), len(defaultFunctions))
		}
	}
}

func TestCompareDegrades(t *testing.T) {
	withSyms := &Side{Symbols: newSymbols(SourceVmlinux, nil), Source: "vmlinux (exact sizes)"}
	without := &Side{Status: "no symbols: x", Calls: []FunctionCalls{{Function: "trie_lookup_elem", Error: "no symbols"}}}
	d := Compare(withSyms, without, Options{})
	if d.Sizes != nil || len(d.CallChanges) != 0 {
		t.Errorf("Compare(side, side without symbols) = sizes %v, changes %v; want none", d.Sizes, d.CallChanges)
	}
}

func TestDiffCalls(t *testing.T) {
	fc := func(size uint64, calls ...Call) *FunctionCalls {
		return &FunctionCalls{Function: "f", Size: size, Calls: calls}
	}
	notFound := &FunctionCalls{Function: "f", Error: ErrFunctionNotFound.Error() + ": f is not a function"}
	for _, tc := range []struct {
		name   string
		a, b   *FunctionCalls
		exactA bool
		want   []string
	}{
		{"inlined", fc(179, Call{Callee: "lpm.isra.0", Sites: 1}), fc(534), true,
			[]string{"f no longer calls lpm.isra.0 (inlined; 179 → 534 bytes)"}},
		{"removed, shrunk", fc(200, Call{Callee: "g", Sites: 1}), fc(150), true,
			[]string{"f no longer calls g (200 → 150 bytes)"}},
		{"out of line again", fc(534), fc(179, Call{Callee: "lpm.isra.0", Sites: 1}), false,
			[]string{"f now calls lpm.isra.0 (out of line; ~534 → 179 bytes)"}},
		{"renumbered clone is no change", fc(100, Call{Callee: "g.isra.0", Sites: 1}), fc(100, Call{Callee: "g.isra.1", Sites: 1}), true, nil},
		{"two clones of one name count together", fc(100, Call{Callee: "g.isra.0", Sites: 1}, Call{Callee: "g.isra.1", Sites: 1}), fc(100, Call{Callee: "g.isra.0", Sites: 1}), true,
			[]string{"f calls g.isra.0 from 2 → 1 sites (100 → 100 bytes)"}},
		{"sites", fc(100, Call{Callee: "g", Sites: 3}), fc(90, Call{Callee: "g", Sites: 2}), true,
			[]string{"f calls g from 3 → 2 sites (100 → 90 bytes)"}},
		{"gone in B", fc(100), notFound, true, []string{"f is not a function in B (inlined into its callers, or not built)"}},
		{"no symbols in B", fc(100), &FunctionCalls{Function: "f", Error: "no symbols"}, true, nil},
	} {
		var got []string
		for _, c := range diffCalls("f", tc.a, tc.b, tc.exactA, true, tc.exactA) {
			got = append(got, c.Line)
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("diffCalls(%s) = %q; want %q", tc.name, got, tc.want)
		}
	}
}

func TestWithFunctions(t *testing.T) {
	if got := (Options{}).WithFunctions(nil); got.Functions != nil || got.Symbols != nil {
		t.Errorf("WithFunctions(nil) = %+v; want the options unchanged", got)
	}
	o := (Options{}).WithFunctions([]string{"__htab_map_lookup_elem", "trie_lookup_elem"})
	if want := []string{"trie_lookup_elem", "trie_update_elem", "trie_delete_elem", "__htab_map_lookup_elem"}; !slices.Equal(o.Functions, want) {
		t.Errorf("WithFunctions().Functions = %v; want %v", o.Functions, want)
	}
	for name, want := range map[string]bool{"__htab_map_lookup_elem": true, "__htab_map_lookup_elem.isra": true, "trie_lookup_elem": true, "htab_map_update_elem": false} {
		if got := o.Symbols.MatchString(name); got != want {
			t.Errorf("WithFunctions().Symbols.MatchString(%q) = %v; want %v", name, got, want)
		}
	}
	given := regexp.MustCompile("^x$")
	if o := (Options{Symbols: given}).WithFunctions([]string{"f"}); o.Symbols != given {
		t.Errorf("WithFunctions() replaced the --symbols regexp %v with %v", given, o.Symbols)
	}
}

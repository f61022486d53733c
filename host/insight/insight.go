package insight

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Input is what is known of one kernel of a comparison. Every field is
// optional; the best symbol source given is used: Vmlinux, then
// DebugPackage, then Kallsyms.
type Input struct {
	// Image is the kernel's bzImage: its payload is the code that is
	// disassembled, and its build ID pairs it with a vmlinux.
	Image string
	// Payload is Image's payload already extracted to an ELF file (the
	// kernel a PVH boot ran, measure.pvhImage): read in place of
	// decompressing Image again.
	Payload string
	// Vmlinux is an unstripped vmlinux of the same build (a build
	// directory's). Without Image it is also the code.
	Vmlinux string
	// DebugPackage is the kernel's linux-image-<release>-dbg .deb.
	DebugPackage string
	// Kallsyms is /proc/kallsyms as read by root in a guest booted with
	// Image (or a System.map of the build).
	Kallsyms []byte
	// Programs and Counts are what the guest's insight pass reported
	// (wire.InsightDoc): the benchmark programs as this kernel loaded
	// them, and calls counted per benchmark operation.
	Programs []wire.ProgramInfo
	Counts   []wire.CallCount
	// Profile is what the guest's profile pass sampled; nil without it.
	Profile *wire.ProfileDoc
	// Memory is what the guest's memory pass ran, MemCounts what the
	// host's plugin counted in that boot, MemoryProblem why there are no
	// counts when the plugin was loaded (nil, nil, "" without the pass).
	Memory        *wire.MemoryDoc
	MemCounts     *vmrunner.MemCounts
	MemoryProblem string
}

// SymbolFile is the symbol source in the file path, given for a kernel: an
// unstripped vmlinux (Input.Vmlinux) or its -dbg Debian package
// (Input.DebugPackage), told apart by kernel.Sniff.
func SymbolFile(path string) (Input, error) {
	format, err := kernel.Sniff(path)
	if err != nil {
		return Input{}, fmt.Errorf("%w (give an unstripped vmlinux or a linux-image-<release>-dbg .deb)", err)
	}
	switch format {
	case kernel.FormatVmlinux:
		return Input{Vmlinux: path}, nil
	case kernel.FormatDeb:
		return Input{DebugPackage: path}, nil
	}
	return Input{}, fmt.Errorf("%s is neither an ELF vmlinux nor a Debian package", path)
}

// Options tune Load and Compare.
type Options struct {
	// Symbols selects the symbols of the size diff; nil means
	// defaultSymbols.
	Symbols *regexp.Regexp
	// Functions are the functions whose calls are listed; nil means
	// defaultFunctions.
	Functions []string
	// CacheDir receives unpacked debug packages (kernel.DebugVmlinux).
	CacheDir string
}

// WithFunctions returns the options with more functions of interest: fns
// join the functions whose calls are listed (after defaultFunctions when
// Functions is nil), and, when Symbols is nil, the size diff's symbols
// (defaultSymbols and fns with their clones). The benchmarks of the map
// families other than the LPM trie name theirs (hashtab.c, bloom_filter.c,
// bpf_task_storage.c). Without fns it returns o unchanged.
func (o Options) WithFunctions(fns []string) Options {
	if len(fns) == 0 {
		return o
	}
	out := slices.Clone(o.functions())
	var quoted []string
	for _, f := range fns {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
		quoted = append(quoted, regexp.QuoteMeta(f))
	}
	o.Functions = out
	if o.Symbols == nil {
		o.Symbols = regexp.MustCompile(defaultSymbols + `|^(` + strings.Join(quoted, "|") + `)(\.[a-z_]+)*$`)
	}
	return o
}

func (o Options) functions() []string {
	if o.Functions == nil {
		return defaultFunctions
	}
	return o.Functions
}

// Side is what Load found for one kernel.
type Side struct {
	// Image describes the code disassembled; nil if none could be read.
	Image *Image `json:"image,omitempty"`
	// Symbols is the source used; nil when there is none (see Status).
	Symbols *Symbols `json:"symbols,omitempty"`
	// Source describes it, e.g. "kallsyms (approximate sizes)"; "" if none.
	Source string `json:"source"`
	// Status is a one-line reason when something is missing: "no
	// symbols: …", or "no code: …" when symbols exist but the image
	// could not be read. "" when all is there.
	Status string `json:"status,omitempty"`
	// Problems are the sources that were given but could not be used
	// (a debug package of another build, a stripped vmlinux), each with
	// its reason, also when a later source stood in.
	Problems []string `json:"problems,omitempty"`
	// Calls are the callees of each function of interest, in the order
	// of Options.Functions.
	Calls []FunctionCalls `json:"calls"`
	// Programs and Counts are Input's, as the guest reported them.
	Programs []wire.ProgramInfo `json:"programs,omitempty"`
	Counts   []wire.CallCount   `json:"counts,omitempty"`
	// functionSizes are the sizes of every function of Symbols
	// (functionSizes), kept in a saved block so that Diff.Resize can draw
	// the size table over other symbols; nil without symbols.
	FunctionSizes map[string]uint64 `json:"function_sizes,omitempty"`
	// ProfileSummary and Profiles are the guest's profile pass,
	// symbolized (nil and empty without one).
	ProfileSummary *ProfileSummary `json:"profile_summary,omitempty"`
	Profiles       []Profile       `json:"profiles,omitempty"`
	// MemorySummary and Memory are the memory pass, per benchmark (nil
	// and empty without one).
	MemorySummary *MemorySummary `json:"memory_summary,omitempty"`
	Memory        []Memory       `json:"memory,omitempty"`

	// Err is the error behind Status, for errors.Is (ErrNoSymbols,
	// ErrBuildIDMismatch, ErrAddressesHidden, …); nil when Status is "".
	Err error `json:"-"`
}

// Load reads the symbols and code of one kernel and disassembles the
// functions of interest. It never fails: what is missing is said in
// Status and Problems, so that a comparison degrades to what each side
// has.
func Load(in Input, opts Options) *Side {
	side := &Side{Programs: in.Programs, Counts: in.Counts}
	var im *Image
	code := in.Image
	if code == "" {
		code = in.Vmlinux
	}
	var codeErr error
	if code != "" {
		var err error
		if in.Payload != "" && code == in.Image {
			im, err = openPayloadELF(in.Image, in.Payload)
		} else {
			im, err = openImage(code)
		}
		if err != nil && in.Vmlinux != "" && code != in.Vmlinux {
			// A payload this package cannot read (an xz kernel): the
			// build's vmlinux holds the same code.
			im, err = openImage(in.Vmlinux)
		}
		if err != nil {
			codeErr = err
		} else {
			defer im.Close()
			// Keep what the report needs, not the decompressed payload.
			side.Image = &Image{Path: im.Path, Compression: im.Compression, BuildID: im.BuildID, TextAddr: im.TextAddr}
		}
	} else {
		codeErr = errors.New("no image given")
	}

	syms, err := loadSymbols(in, im, opts, side)
	switch {
	case err != nil:
		side.Err = err
		side.Status = oneLine(err)
		if !strings.HasPrefix(side.Status, "no symbols") {
			side.Status = "no symbols: " + side.Status
		}
		for _, f := range opts.functions() {
			side.Calls = append(side.Calls, FunctionCalls{Function: f, Error: "no symbols"})
		}
		side.AddProfile(in.Profile)
		side.AddMemory(in)
		return side
	case codeErr != nil:
		side.Err = codeErr
		side.Status = "no code: " + oneLine(codeErr)
	}
	side.Symbols = syms
	side.Source = syms.Describe()
	side.AddProfile(in.Profile)
	side.AddMemory(in)
	side.FunctionSizes = functionSizes(syms)
	for _, f := range opts.functions() {
		if im == nil {
			side.Calls = append(side.Calls, FunctionCalls{Function: f, Error: "no code to disassemble"})
			continue
		}
		fc, err := findCalls(im, syms, f)
		if err != nil {
			side.Calls = append(side.Calls, FunctionCalls{Function: f, Error: oneLine(err)})
			continue
		}
		side.Calls = append(side.Calls, *fc)
	}
	return side
}

// loadSymbols tries the sources of in, best first, noting the failures in
// side.Problems. The error, when no source works, wraps ErrNoSymbols and
// the last source's error.
func loadSymbols(in Input, im *Image, opts Options, side *Side) (*Symbols, error) {
	var last error
	fail := func(err error) {
		side.Problems = append(side.Problems, oneLine(err))
		last = err
	}
	if in.Vmlinux != "" {
		s, err := readVmlinux(in.Vmlinux)
		if err == nil {
			err = checkBuildID(im, s, "vmlinux "+in.Vmlinux)
		}
		if err == nil {
			return s, nil
		}
		fail(err)
	}
	if in.DebugPackage != "" {
		s, err := readDebugPackage(in.DebugPackage, opts.CacheDir)
		if err == nil {
			err = checkBuildID(im, s, "debug package "+in.DebugPackage)
		}
		if err == nil {
			s.Path = in.DebugPackage
			return s, nil
		}
		fail(err)
	}
	if in.Kallsyms != nil {
		var ko kallsymsOptions
		if im != nil {
			ko = kallsymsOptions{LinkText: im.TextAddr, SectionEnd: im.SectionEnd}
		}
		s, err := ParseKallsyms(bytes.NewReader(in.Kallsyms), ko)
		if err == nil {
			return s, nil
		}
		fail(err)
	}
	switch {
	case last == nil:
		return nil, fmt.Errorf("%w: no vmlinux, debug package or kallsyms for this kernel", ErrNoSymbols)
	case errors.Is(last, ErrNoSymbols):
		return nil, last
	}
	return nil, fmt.Errorf("%w: %w", ErrNoSymbols, last)
}

// checkBuildID verifies that the vmlinux whose symbols are s is the
// build of the image im (skipped when either has no build ID).
func checkBuildID(im *Image, s *Symbols, what string) error {
	if im == nil || im.BuildID == "" || s.BuildID == "" || im.BuildID == s.BuildID {
		return nil
	}
	return fmt.Errorf("%s: %w: its build ID is %s, the image's is %s (the symbols of another build; give the vmlinux or -dbg package of this kernel)", what, ErrBuildIDMismatch, s.BuildID, im.BuildID)
}

// oneLine flattens an error message for a status line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// CallChange is one difference between the callees of a function in A
// and in B.
type CallChange struct {
	Function string `json:"function"`
	// Callee is the callee's name on the side that has the call (A's
	// when both do).
	Callee string `json:"callee,omitempty"`
	// Kind is "removed" (B no longer calls it), "added" (B calls it, A
	// did not), "sites" (both call it, from a different number of call
	// sites) or "missing" (the function is not there on one side).
	Kind     string `json:"kind"`
	OldSites int    `json:"old_sites"`
	NewSites int    `json:"new_sites"`
	// OldSize and NewSize are the function's sizes; ExactSizes says
	// whether both come from ELF symbol tables.
	OldSize    uint64 `json:"old_size"`
	NewSize    uint64 `json:"new_size"`
	ExactSizes bool   `json:"exact_sizes"`
	// Line says it in one sentence, e.g. "trie_lookup_elem no longer
	// calls longest_prefix_match.isra.0 (inlined; 179 → 534 bytes)".
	Line string `json:"line"`
}

// Diff is the insight block of an A/B comparison.
type Diff struct {
	A *Side `json:"a"`
	B *Side `json:"b"`
	// Sizes is the size diff of the selected symbols; nil when a side has
	// no symbols.
	Sizes *SizeDiff `json:"sizes,omitempty"`
	// CallChanges are the differences in the calls of the functions of
	// interest, function by function; empty when none changed or a side
	// could not be disassembled.
	CallChanges []CallChange `json:"call_changes"`
	// Programs compare the benchmark programs as A and B loaded them,
	// and Counts the calls per operation the guests counted; empty
	// without a guest insight pass.
	Programs []ProgramChange `json:"programs,omitempty"`
	Counts   []CountRow      `json:"counts,omitempty"`
	// Profiles compare the guests' profiles, benchmark by benchmark;
	// empty without a profile pass.
	Profiles []ProfileDiff `json:"profiles,omitempty"`
	// Memory compares the memory passes' counts per operation, benchmark
	// by benchmark; empty without a memory pass.
	Memory []MemoryDiff `json:"memory,omitempty"`
	// Notes qualify the numbers ("sizes of A are approximate: …").
	Notes []string `json:"notes,omitempty"`
}

// Compare builds the insight block from two loaded sides.
func Compare(a, b *Side, opts Options) *Diff {
	d := &Diff{A: a, B: b, CallChanges: []CallChange{}}
	d.Programs = comparePrograms(a.Programs, b.Programs)
	d.Counts = compareCounts(a.Counts, b.Counts)
	d.Profiles = compareProfiles(a.Profiles, b.Profiles)
	d.Memory = compareMemory(a.Memory, b.Memory)
	if a.Symbols == nil || b.Symbols == nil {
		return d
	}
	d.Sizes = diffSizes(a.Symbols, b.Symbols, sizeOptions{Symbols: opts.Symbols})
	var approx []string
	if !a.Symbols.ExactSizes {
		approx = append(approx, "A")
	}
	if !b.Symbols.ExactSizes {
		approx = append(approx, "B")
	}
	if len(approx) > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("sizes of %s are approximate: kallsyms has none, each is the distance to the next symbol", strings.Join(approx, " and ")))
	}
	d.Notes = append(d.Notes, "__pfx_ padding symbols are left out (bloat-o-meter counts them)")
	exact := a.Symbols.ExactSizes && b.Symbols.ExactSizes
	for _, f := range opts.functions() {
		fa, fb := findFunction(a.Calls, f), findFunction(b.Calls, f)
		d.CallChanges = append(d.CallChanges, diffCalls(f, fa, fb, a.Symbols.ExactSizes, b.Symbols.ExactSizes, exact)...)
	}
	return d
}

func findFunction(calls []FunctionCalls, f string) *FunctionCalls {
	for i := range calls {
		if calls[i].Function == f {
			return &calls[i]
		}
	}
	return nil
}

// diffCalls compares the callees of one function, matching them by
// normalised name.
func diffCalls(f string, fa, fb *FunctionCalls, exactA, exactB, exact bool) []CallChange {
	okA := fa != nil && fa.Error == ""
	okB := fb != nil && fb.Error == ""
	switch {
	case !okA && !okB:
		return nil
	case !okA || !okB:
		if fa == nil || fb == nil {
			return nil
		}
		missing, why := "A", fa.Error
		if okA {
			missing, why = "B", fb.Error
		}
		if !strings.Contains(why, ErrFunctionNotFound.Error()) {
			return nil // no symbols or no code on that side: its Status says so
		}
		return []CallChange{{Function: f, Kind: "missing", Line: fmt.Sprintf("%s is not a function in %s (inlined into its callers, or not built)", f, missing)}}
	}
	sizes := sizeChange(fa.Size, fb.Size, exactA, exactB)
	base := CallChange{Function: f, OldSize: fa.Size, NewSize: fb.Size, ExactSizes: exact}
	ca, cb := fa.callsByName(), fb.callsByName()
	var out []CallChange
	for _, c := range fa.Calls {
		n := normalizeName(c.Callee)
		old := ca[n]
		if old.Callee != c.Callee {
			continue // a second clone of one name: reported with the first
		}
		ch := base
		ch.Callee, ch.OldSites = c.Callee, old.Sites
		nw, still := cb[n]
		switch {
		case !still:
			ch.Kind = "removed"
			why := sizes
			if fb.Size > fa.Size {
				why = "inlined; " + sizes
			}
			ch.Line = fmt.Sprintf("%s no longer calls %s (%s)", f, c.Callee, why)
		case nw.Sites != old.Sites:
			ch.Kind, ch.NewSites = "sites", nw.Sites
			ch.Line = fmt.Sprintf("%s calls %s from %d → %d sites (%s)", f, c.Callee, old.Sites, nw.Sites, sizes)
		default:
			continue
		}
		out = append(out, ch)
	}
	for _, c := range fb.Calls {
		n := normalizeName(c.Callee)
		if _, had := ca[n]; had || cb[n].Callee != c.Callee {
			continue
		}
		ch := base
		ch.Kind, ch.Callee, ch.NewSites = "added", c.Callee, cb[n].Sites
		why := sizes
		if fb.Size < fa.Size {
			why = "out of line; " + sizes
		}
		ch.Line = fmt.Sprintf("%s now calls %s (%s)", f, c.Callee, why)
		out = append(out, ch)
	}
	return out
}

// sizeChange says "179 → 534 bytes", with "~" before an approximate size.
func sizeChange(a, b uint64, exactA, exactB bool) string {
	approx := func(exact bool) string {
		if exact {
			return ""
		}
		return "~"
	}
	return fmt.Sprintf("%s%d → %s%d bytes", approx(exactA), a, approx(exactB), b)
}

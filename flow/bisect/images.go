package bisect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/wire"
)

// imagesBisect searches an ordered list of prebuilt kernels (bzImage files,
// .deb packages, build directories) for the first that matches the bad end:
// the first is the good endpoint and the last the bad one, as for a range of
// distribution or CI builds.
type imagesBisect struct {
	Bisection
	Images []string
}

// Run runs the search to its end.
func (ib *imagesBisect) Run(ctx context.Context) (*campaign.Result, error) {
	n := len(ib.Images)
	if ib.State.Result != nil {
		ib.logf("this bisection finished before: its result is in %s", ib.State.Path())
		return ib.State.Result, nil
	}
	if n < 2 {
		return nil, errors.New("a bisection over kernels needs at least two: the first is good, the last bad")
	}
	ib.logf("bisecting %d kernels, %s (good) … %s (bad) (state: %s)", n, filepath.Base(ib.Images[0]), filepath.Base(ib.Images[n-1]), ib.State.Dir())
	good, err := ib.kernelAt(0)
	if err != nil {
		return nil, fmt.Errorf("good endpoint: %w", err)
	}
	bad, err := ib.kernelAt(n - 1)
	if err != nil {
		return nil, fmt.Errorf("bad endpoint: %w", err)
	}
	if err := ib.setEndpoints(ctx, good, bad); err != nil {
		return nil, err
	}
	first, rng, err := searchList(ctx, n, func(ctx context.Context, i int) (campaign.Class, error) {
		if st, ok := ib.State.StepFor("", i); ok {
			ib.logf("step for #%d %s replayed from the state: %s", i+1, filepath.Base(ib.Images[i]), st.Verdict.Class)
			return st.Verdict.Class, nil
		}
		k, err := ib.kernelAt(i)
		if err != nil {
			return campaign.Skip, err
		}
		return ib.classify(ctx, campaign.Step{Index: i}, k)
	})
	if err != nil {
		return nil, err
	}
	res := &campaign.Result{}
	for _, i := range rng {
		res.Range = append(res.Range, ib.Images[i])
	}
	if first >= 0 {
		res.FirstBad, res.Index, res.Parent = ib.Images[first], first, ib.Images[first-1]
		p, err := ib.kernelAt(first - 1)
		if err != nil {
			return nil, err
		}
		c, err := ib.kernelAt(first)
		if err != nil {
			return nil, err
		}
		if res.Recheck, err = ib.recheck(ctx, p, c); err != nil {
			return nil, err
		}
	}
	return ib.finish(res)
}

// kernelAt describes the i-th kernel, with its compiler and configuration
// when the kernel's config is known.
func (ib *imagesBisect) kernelAt(i int) (campaign.Candidate, error) {
	in := ib.Images[i]
	k := campaign.Candidate{Input: in, Label: fmt.Sprintf("#%d %s", i+1, filepath.Base(in)), Labels: map[string]string{}}
	if b := ib.State.Kernels[in]; b != nil {
		k.Labels[wire.KeyCompiler], k.Labels[wire.KeyKconfig] = b.Compiler, b.Kconfig
		return k, nil
	}
	rk, err := ib.Bench.Resolve(in)
	if err != nil {
		if kernel.IsBadInput(err) {
			return k, nil // Classify skips it, saying why
		}
		return k, err
	}
	b := &kbuild.Built{Kernel: in, Image: rk.SHA256, Release: rk.Release}
	if rk.ConfigPath != "" {
		if info, err := kbuild.InspectConfig(rk.ConfigPath); err == nil {
			b.Compiler, b.Kconfig = info.Compiler, info.ShortHash()
		}
	}
	ib.State.Kernels[in] = b
	k.Labels[wire.KeyCompiler], k.Labels[wire.KeyKconfig] = b.Compiler, b.Kconfig
	return k, nil
}

// ExpandImages turns --images arguments into the ordered list of kernels. An
// argument may be
//
//   - a kernel: a bzImage/vmlinuz file, a .deb, or a kernel build or
//     package directory (kernel.Sniff tells, by content);
//   - a directory of kernels (kernel.Inputs), ordered by version: names
//     compare with their numbers as numbers, so 6.1.0-9 < 6.1.0-10 < 6.12.1;
//   - a list file: one kernel per line, in order; blank lines and lines
//     starting with # are ignored; relative paths are relative to the file.
func ExpandImages(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("kernel list %s: %w", a, err)
		}
		format, err := kernel.Sniff(a)
		if err != nil {
			return nil, fmt.Errorf("kernel list %s: %w", a, err)
		}
		switch {
		case format.IsInput():
			out = append(out, a)
		case fi.IsDir():
			names, err := kernel.Inputs(a)
			if err != nil {
				return nil, fmt.Errorf("kernel list %s: %w", a, err)
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("kernel list %s: no kernels in the directory (.deb packages, bzImage files or kernel directories)", a)
			}
			slices.SortFunc(names, VersionCompare)
			for _, n := range names {
				out = append(out, filepath.Join(a, n))
			}
		default:
			list, err := readList(a)
			if err != nil {
				return nil, err
			}
			out = append(out, list...)
		}
	}
	return out, nil
}

func readList(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kernel list %s: %w", path, err)
	}
	if slices.ContainsFunc([]rune(string(data[:min(len(data), 4096)])), func(r rune) bool {
		return r == unicode.ReplacementChar || (r < 32 && r != '\n' && r != '\r' && r != '\t')
	}) {
		return nil, fmt.Errorf("kernel list %s: not a kernel, a directory or a list of kernels (one path per line)", path)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(filepath.Dir(path), line)
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kernel list %s: the list names no kernels", path)
	}
	return out, nil
}

// VersionCompare orders names the way versions are read: runs of digits
// compare as numbers, everything else byte by byte, and "~" sorts before
// anything (Debian's "before" marker, as in 6.12.117-1~deb12u1).
func VersionCompare(a, b string) int {
	for a != "" || b != "" {
		da, ra := leadingDigits(a)
		db, rb := leadingDigits(b)
		if da != "" && db != "" {
			na, _ := strconv.ParseUint(strings.TrimLeft(da, "0"), 10, 64)
			nb, _ := strconv.ParseUint(strings.TrimLeft(db, "0"), 10, 64)
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if c := cmp.Compare(order(a), order(b)); c != 0 {
			return c
		}
		a, b = a[1:], b[1:]
	}
	return 0
}

// order ranks the first byte of s: "~" before the end of the string, the
// end before anything else.
func order(s string) int {
	switch {
	case s == "":
		return 0
	case s[0] == '~':
		return -1
	}
	return int(s[0]) + 1
}

func leadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

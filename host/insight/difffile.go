package insight

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
)

// MaxDiffFileBytes bounds a saved insight block (ReadDiffFile): the
// callees, size rows and counts of a comparison take tens of KiB, the
// function sizes of each side (Side.FunctionSizes) 1–2 MB.
const MaxDiffFileBytes = 16 << 20

// DiffFile is where the insight block of a results file is kept:
// RESULTS.insight.json beside it.
func DiffFile(results string) string { return results + ".insight.json" }

// WriteDiffFile saves d as JSON, atomically. What it keeps is what the
// reports render and each side's function sizes; the symbol tables
// themselves are not kept, so a saved block is rendered again as it was,
// except that its size table can be drawn over other functions
// (Diff.Resize).
func WriteDiffFile(path string, d *Diff) error {
	err := cachefile.WriteAtomic(path, func(w io.Writer) error { return EncodeDiff(w, d) })
	if err != nil {
		return fmt.Errorf("write insight block: %w", err)
	}
	return nil
}

// EncodeDiff writes d as the JSON WriteDiffFile saves and DecodeDiff reads.
func EncodeDiff(w io.Writer, d *Diff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(d)
}

// Compact is d without each side's function sizes (Side.FunctionSizes),
// the bulk of a saved block: what the reports render, for a store that
// keeps a block per night and never redraws its size table (Diff.Resize).
// d itself is not changed.
func (d *Diff) Compact() *Diff {
	c := *d
	for _, s := range []**Side{&c.A, &c.B} {
		if *s != nil {
			side := **s
			side.FunctionSizes = nil
			*s = &side
		}
	}
	return &c
}

// ReadDiffFile reads a block saved by WriteDiffFile, within
// MaxDiffFileBytes (ErrTooLarge). A missing file is os.ErrNotExist.
func ReadDiffFile(path string) (*Diff, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read insight block: %w", err)
	}
	defer f.Close()
	d, err := DecodeDiff(f)
	if err != nil {
		return nil, fmt.Errorf("read insight block %s: %w", path, err)
	}
	return d, nil
}

// DecodeDiff reads a block EncodeDiff wrote, within MaxDiffFileBytes
// (ErrTooLarge).
func DecodeDiff(r io.Reader) (*Diff, error) {
	lr := &io.LimitedReader{R: r, N: MaxDiffFileBytes + 1}
	var d Diff
	if err := json.NewDecoder(lr).Decode(&d); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxDiffFileBytes)
		}
		return nil, fmt.Errorf("%w (not written by lpmbisect?)", err)
	}
	if d.A == nil || d.B == nil {
		return nil, errors.New("no sides (not written by lpmbisect?)")
	}
	return &d, nil
}

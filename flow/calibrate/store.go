package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
)

// formatVersion is the version of the calibration file format. A file of
// another version is treated as no calibration.
const formatVersion = 1

// maxFile bounds what Load reads: a calibration of a hundred benchmarks
// from a hundred boots is well under 1 MiB.
const maxFile = 16 << 20

// ErrNoCalibration is wrapped by Load's error when there is no usable
// calibration for the key.
var ErrNoCalibration = errors.New("no calibration")

// ErrStale is wrapped by Load's error when the calibration is older than
// the age asked for; Load then returns it too, so a caller can say when it
// was made.
var ErrStale = errors.New("calibration is stale")

// Shelf keeps calibrations by key: a cache directory (Dir) for boots on
// this host, or a fleet's database for boots on a host class, where every
// client of the class finds them (see Remote). Load and Store do the
// rest: file format, key check, age and merging.
type Shelf interface {
	// Read returns the stored calibration of key as Store wrote it; nil
	// when there is none.
	Read(ctx context.Context, key Key) ([]byte, error)
	// Update stores what merge makes of the stored calibration of key
	// (nil when there is none), with no other Update of key in between.
	Update(ctx context.Context, key Key, merge func(old []byte) ([]byte, error)) error
	// Where says where key's calibration is kept, in words.
	Where(key Key) string
}

// Dir is the shelf of a cache directory: one file per key under
// <dir>/calibration.
type Dir string

// Path is the file of key's calibration.
func (d Dir) Path(key Key) string {
	return filepath.Join(string(d), "calibration", key.fileName())
}

// Where implements Shelf.
func (d Dir) Where(key Key) string { return d.Path(key) }

// Read implements Shelf.
func (d Dir) Read(_ context.Context, key Key) ([]byte, error) {
	path := d.Path(key)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read calibration: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("read calibration: %w", err)
	}
	return data, nil
}

// Update implements Shelf: under a lock file beside the calibration's,
// atomically.
func (d Dir) Update(ctx context.Context, key Key, merge func(old []byte) ([]byte, error)) error {
	path := d.Path(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	unlock, err := cachefile.Lock(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	old, err := d.Read(ctx, key)
	if err != nil {
		return err
	}
	data, err := merge(old)
	if err != nil {
		return err
	}
	return cachefile.WriteBytes(path, data)
}

// load returns the calibration for key on shelf. Its error wraps
// ErrNoCalibration when there is none (or one of another file format), and
// ErrStale, with the calibration returned as well, when it is older than
// maxAge (maxAge ≤ 0: never stale).
func load(ctx context.Context, shelf Shelf, key Key, maxAge time.Duration) (*Calibration, error) {
	data, err := shelf.Read(ctx, key)
	if err != nil {
		return nil, err
	}
	c, err := decode(data, shelf.Where(key), key)
	if err != nil {
		return nil, err
	}
	if age := time.Since(c.Date); maxAge > 0 && age > maxAge {
		return c, fmt.Errorf("calibration of %s made %s, %s ago: %w (older than %s)",
			c.Kernel, c.Date.Local().Format(time.DateTime), age.Round(time.Minute), ErrStale, maxAge)
	}
	return c, nil
}

// decode reads a stored calibration of key (nil: none), kept at where.
func decode(data []byte, where string, key Key) (*Calibration, error) {
	if data == nil {
		return nil, fmt.Errorf("%w for %s", ErrNoCalibration, key)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("read calibration %s: larger than %d MiB (remove it and calibrate again)", where, maxFile>>20)
	}
	var version struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &version); err != nil {
		return nil, fmt.Errorf("read calibration %s: %w (remove it and calibrate again)", where, err)
	}
	if version.Version != formatVersion {
		return nil, fmt.Errorf("%w for %s: %s has file format %d, not %d (calibrate again)", ErrNoCalibration, key, where, version.Version, formatVersion)
	}
	var c Calibration
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("read calibration %s: %w (remove it and calibrate again)", where, err)
	}
	if c.Key != key {
		return nil, fmt.Errorf("%w for %s: %s holds one for %s", ErrNoCalibration, key, where, c.Key)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("read calibration %s: %w (remove it and calibrate again)", where, err)
	}
	return &c, nil
}

// check refuses a stored calibration whose rows say what Compute never
// does: a deterministic row whose bound is not a fraction below its
// method's maximum, or a floor reached that is not a fraction. A store is
// shared (the fleet's database) or edited by hand, and such a row would
// become a jitter bound that hides any change, or a minimum effect of
// nothing.
func (c *Calibration) check() error {
	for _, b := range c.Benchmarks {
		if b.Deterministic && !(b.Bound > 0 && b.Bound < c.Method.MaxBound && c.Method.MaxBound < 1) {
			return fmt.Errorf("%s %s is deterministic with a bound of %g, not a fraction below the method's maximum %g", b.Name, b.Unit, b.Bound, c.Method.MaxBound)
		}
		if b.FloorReached && !(b.Floor > 0 && b.Floor < 1) {
			return fmt.Errorf("%s %s reached a floor of %g, not a fraction", b.Name, b.Unit, b.Floor)
		}
	}
	return nil
}

// Store keeps c on shelf as the calibration of its key, after merging
// into c what the stored calibration of the key knew (see Merge): c's
// rows replace all stored rows (a calibration covers the benchmarks it
// ran, with one date), and every benchmark ever seen with two modes stays
// non-deterministic. A stored calibration that cannot be read is an
// error rather than lost knowledge.
func Store(ctx context.Context, shelf Shelf, c *Calibration) error {
	err := shelf.Update(ctx, c.Key, func(data []byte) ([]byte, error) {
		if data != nil {
			old, err := decode(data, shelf.Where(c.Key), c.Key)
			switch {
			case errors.Is(err, ErrNoCalibration):
			case err != nil:
				return nil, err
			default:
				if err := c.Merge(old); err != nil {
					return nil, err
				}
			}
		}
		out, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(out, '\n'), nil
	})
	if err != nil {
		return fmt.Errorf("store calibration: %w", err)
	}
	return nil
}

// Merge takes into c the knowledge of old, an earlier calibration of the
// same key, that a new calibration must not lose: the benchmarks that
// showed two modes. They join c.TwoModes (with the earliest record of
// each), and c's rows of them become non-deterministic. c's own bounds
// stand.
func (c *Calibration) Merge(old *Calibration) error {
	if old.Key != c.Key {
		return fmt.Errorf("calibrate: merge a calibration for %s into one for %s (keys differ)", old.Key, c.Key)
	}
	merged := append([]ModeRecord(nil), old.TwoModes...)
	for _, m := range c.TwoModes {
		if !old.everTwoModes(m.Benchmark, m.Unit) {
			merged = append(merged, m)
		}
	}
	c.TwoModes = merged
	for i := range c.Benchmarks {
		b := &c.Benchmarks[i]
		if !old.everTwoModes(b.Name, b.Unit) {
			continue
		}
		b.EverTwoModes = true
		if b.Deterministic {
			b.Deterministic = false
			for _, m := range old.TwoModes {
				if m.Benchmark == b.Name && m.Unit == b.Unit {
					b.Why = fmt.Sprintf("two modes seen before (kernel %s, %s)", m.Kernel, m.Date.Format(time.DateOnly))
				}
			}
		}
	}
	return nil
}

// jsonFloat encodes the non-finite values JSON has no numbers for as the
// strings "NaN", "+Inf" and "-Inf".
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	switch v := float64(f); {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	default:
		return json.Marshal(v)
	}
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case "NaN":
			*f = jsonFloat(math.NaN())
		case "+Inf":
			*f = jsonFloat(math.Inf(1))
		case "-Inf":
			*f = jsonFloat(math.Inf(-1))
		default:
			return fmt.Errorf("%q is not a number", s)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

// benchmarkFields is Benchmark without its JSON methods.
type benchmarkFields Benchmark

// benchmarkJSON shadows the fields of Benchmark that may be NaN or
// infinite.
type benchmarkJSON struct {
	*benchmarkFields
	Medians      []jsonFloat `json:"medians"`
	MaxDiff      jsonFloat   `json:"max_diff"`
	QuantileDiff jsonFloat   `json:"quantile_diff"`
	Bound        jsonFloat   `json:"bound"`
	Floor        jsonFloat   `json:"floor"`
}

// MarshalJSON encodes b with NaN and infinite values as strings.
func (b Benchmark) MarshalJSON() ([]byte, error) {
	j := benchmarkJSON{benchmarkFields: (*benchmarkFields)(&b), MaxDiff: jsonFloat(b.MaxDiff),
		QuantileDiff: jsonFloat(b.QuantileDiff), Bound: jsonFloat(b.Bound), Floor: jsonFloat(b.Floor)}
	for _, m := range b.Medians {
		j.Medians = append(j.Medians, jsonFloat(m))
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (b *Benchmark) UnmarshalJSON(data []byte) error {
	j := benchmarkJSON{benchmarkFields: (*benchmarkFields)(b)}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	b.MaxDiff, b.QuantileDiff, b.Bound, b.Floor = float64(j.MaxDiff), float64(j.QuantileDiff), float64(j.Bound), float64(j.Floor)
	b.Medians = nil
	for _, m := range j.Medians {
		b.Medians = append(b.Medians, float64(m))
	}
	return nil
}

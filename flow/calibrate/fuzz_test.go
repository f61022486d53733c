package calibrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// FuzzDecodeCalibration reads arbitrary stored calibrations of one key, as
// Load takes them from a directory or the fleet's shared database: one
// accepted is of the key and format asked for, its deterministic rows have
// bounds below the method's maximum and its floors are fractions, and it
// re-encodes to bytes that decode to the same calibration. The seed is a
// calibration lpmbisect calibrate stored after icount boots of Debian's
// 6.12 kernel (testdata/fuzz/FuzzDecodeCalibration; its floors are NaN,
// none reached), and the same with an infinite difference.
func FuzzDecodeCalibration(f *testing.F) {
	const seed = "testdata/fuzz/FuzzDecodeCalibration/real-icount-612"
	key := seedKey(f, seed)
	real, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.Replace(unquoteSeed(f, real), []byte(`"max_diff": 0`), []byte(`"max_diff": "+Inf"`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decode(data, "fuzz", key)
		if err != nil {
			return
		}
		if c.Key != key || c.Version != formatVersion || len(data) > maxFile {
			t.Fatalf("decode accepted key %v, version %d, %d bytes", c.Key, c.Version, len(data))
		}
		for _, b := range c.Benchmarks {
			if bound, ok := c.Bound(b.Name, b.Unit); ok && !(bound > 0 && bound < c.Method.MaxBound) {
				t.Fatalf("%s %s: deterministic with bound %g (maximum %g)", b.Name, b.Unit, bound, c.Method.MaxBound)
			}
			if floor, ok := c.Floor(b.Name, b.Unit); ok && !(floor > 0 && floor < 1) {
				t.Fatalf("%s %s: floor %g reached", b.Name, b.Unit, floor)
			}
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("a decoded calibration does not encode: %v", err)
		}
		c2, err := decode(again, "fuzz", key)
		if err != nil {
			t.Fatalf("a decoded calibration, encoded again, does not decode: %v\n%s", err, again)
		}
		if again2, _ := json.Marshal(c2); !bytes.Equal(again, again2) {
			t.Fatalf("calibration encodes to\n%s\nthen to\n%s", again, again2)
		}
	})
}

// seedKey returns the key of the calibration in a corpus file.
func seedKey(tb testing.TB, path string) Key {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var c Calibration
	if err := json.Unmarshal(unquoteSeed(tb, data), &c); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return c.Key
}

// unquoteSeed returns the []byte value of a one-value corpus file.
func unquoteSeed(tb testing.TB, file []byte) []byte {
	tb.Helper()
	var s string
	if _, err := fmt.Sscanf(string(bytes.TrimPrefix(file, []byte("go test fuzz v1\n[]byte("))), "%q", &s); err != nil {
		tb.Fatalf("corpus file: %v", err)
	}
	return []byte(s)
}

// Package testseries makes the synthetic nightly series that the tests of
// several packages share: one shaped like the public series that a single
// bad night blinded, as values for package changepoint and as results
// files for history import, and a sheriff's morning under icount (two
// steps, one better, one worse, and an outlier) for the served pages.
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package testseries

import (
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Nights of the bad-night series: the bad night, the first night of its
// −12 % step and the first night of its +19 % step.
const (
	badNight   = 10
	step       = 15
	secondStep = 45
)

// BadNightValue is night i of the bad-night series: 15 nights near 26.7k,
// then near 23.5k (−12 %), each within about ±1 % (from rng), one night at
// −41 % (badNight) five nights before that step, and a +19 % step at
// secondStep. It draws one number from rng every night.
func BadNightValue(i int, rng *rand.Rand) float64 {
	level := 26700.0
	switch {
	case i >= secondStep:
		level = 23500 * 1.19
	case i >= step:
		level = 23500
	}
	v := level * (1 + 0.01*(2*rng.Float64()-1))
	if i == badNight {
		v = 26700 * 0.59
	}
	return v
}

// Date is the date of night i: 2026-01-01 and the days after.
func Date(i int) string {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format(time.DateOnly)
}

// WriteBadNight writes night i of the bad-night series into dir as a
// results file that history import takes: one value a night of
// BenchmarkPublic/lookup under TCG wall time, no reference, with its date
// and a commit of its own, and returns its path.
func WriteBadNight(t testing.TB, dir string, i int, rng *rand.Rand) string {
	t.Helper()
	date := Date(i)
	path := filepath.Join(dir, date+".txt")
	text := fmt.Sprintf("accel: tcg\ndate: %s\ncommit: %040x\nboot: 1\nBenchmarkPublic/lookup 1 %g ns/op\n", date, i+1, BadNightValue(i, rng))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Nights of the sheriff's-morning series: its −12 % step, its one-night
// outlier and its +8 % step.
const (
	MorningStep       = 20
	MorningOutlier    = 30
	MorningSecondStep = 42
)

// morningValue is a boot of night i of the sheriff's-morning series: a
// lookup's instruction count, 1065 insn/op, 12 % lower from
// MorningStep, 8 % higher again from MorningSecondStep, 25 % higher on
// MorningOutlier alone, each boot within ±0.02 % (from rng: icount's
// jitter). It draws one number from rng a boot.
func morningValue(i int, rng *rand.Rand) float64 {
	level := 1065.0
	if i >= MorningStep {
		level *= 0.88
	}
	if i >= MorningSecondStep {
		level *= 1.08
	}
	if i == MorningOutlier {
		level *= 1.25
	}
	return level * (1 + 0.0002*(2*rng.Float64()-1))
}

// WriteMorningNight writes night i of the sheriff's-morning series into
// dir as a results file that history import takes: two boots of
// BenchmarkLPMTrie/op=lookup/keys=random/entries=10000 under icount, no
// reference, with its date and a commit of its own, and returns its path.
func WriteMorningNight(t testing.TB, dir string, i int, rng *rand.Rand) string {
	t.Helper()
	date := Date(i)
	path := filepath.Join(dir, date+".txt")
	text := fmt.Sprintf("accel: icount\ndate: %s\ncommit: %x\n", date, sha1.Sum([]byte(date)))
	for boot := 1; boot <= 2; boot++ {
		text += fmt.Sprintf("boot: %d\nBenchmarkLPMTrie/op=lookup/keys=random/entries=10000 1 %.2f insn/op\n", boot, morningValue(i, rng))
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

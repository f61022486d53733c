package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStoreLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := mustCompute(t, synthBoots(8, 5, "icount", icountRows, 1), Options{Date: time.Now().Add(-time.Hour)})
	// A row with an infinite difference and no floor (NaN) must survive.
	inf := synthRow{name: "Zero", median: values(0, 0, 0, 0, 0, 0, 0, 1)}
	c2 := mustCompute(t, synthBoots(8, 5, "icount", append(icountRows, inf), 1), Options{Date: c.Date})
	if b := row(t, c2, "Zero", "insn/op"); !math.IsInf(b.MaxDiff, 1) || b.Deterministic {
		t.Fatalf("Zero: MaxDiff %g, deterministic %v; want +Inf, false", b.MaxDiff, b.Deterministic)
	}
	c = c2
	if err := Store(context.Background(), Dir(dir), c); err != nil {
		t.Fatalf("Store: %v", err)
	}
	got, err := load(context.Background(), Dir(dir), c.Key, 24*time.Hour)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want, _ := json.Marshal(c)
	have, _ := json.Marshal(got)
	if !bytes.Equal(want, have) {
		t.Errorf("Load after Store =\n%s\nwant\n%s", have, want)
	}
	if !got.Date.Equal(c.Date) {
		t.Errorf("Load: Date %v; want %v", got.Date, c.Date)
	}
	if b := row(t, got, "Zero", "insn/op"); !math.IsInf(b.MaxDiff, 1) || !math.IsInf(b.Bound, 1) {
		t.Errorf("Load: Zero MaxDiff %g, Bound %g; want +Inf", b.MaxDiff, b.Bound)
	}
	if b := row(t, got, "Flaky", "insn/op"); !math.IsNaN(b.Medians[2]) {
		t.Errorf("Load: Flaky medians %v; want NaN for boot 3, which did not run it", b.Medians)
	}
	if bound, ok := got.Bound("Jitter", "insn/op"); !ok || !near(bound, 3e-4) {
		t.Errorf("Load: Bound(Jitter) = %g, %v; want 3e-4, true", bound, ok)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "calibration", "icount-*.json"))
	if len(matches) != 1 {
		t.Errorf("files under calibration/: %v; want one icount-*.json", matches)
	}
}

func TestLoadNoCalibration(t *testing.T) {
	dir := t.TempDir()
	c := mustCompute(t, synthBoots(3, 3, "icount", icountRows[:2], 1), Options{})
	if got, err := load(context.Background(), Dir(dir), c.Key, 0); !errors.Is(err, ErrNoCalibration) || got != nil {
		t.Errorf("Load(empty cache) = %v, %v; want nil, ErrNoCalibration", got, err)
	}
	if err := Store(context.Background(), Dir(dir), c); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Key){
		"rounds": func(k *Key) { k.Rounds = 5 },
		"qemu":   func(k *Key) { k.QEMU = "8.2.0" },
		"host":   func(k *Key) { k.Host.Name = "other" },
		"paired": func(k *Key) { k.Paired = true },
		// A wall-time calibration never serves icount, nor the other way
		// round, and one of 3 samples a boot not a plan of 1.
		"accel":   func(k *Key) { k.Accel = "tcg" },
		"samples": func(k *Key) { k.Samples = 1 },
	} {
		k := c.Key
		change(&k)
		if _, err := load(context.Background(), Dir(dir), k, 0); !errors.Is(err, ErrNoCalibration) {
			t.Errorf("Load(key with other %s) = %v; want ErrNoCalibration", name, err)
		}
	}
	// A file of another format is no calibration either.
	path := Dir(dir).Path(c.Key)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(`"version": 1`), []byte(`"version": 99`), 1), 0o644)
	if _, err := load(context.Background(), Dir(dir), c.Key, 0); !errors.Is(err, ErrNoCalibration) {
		t.Errorf("Load(format 99) = %v; want ErrNoCalibration", err)
	}
	// A broken file is an error of its own, and Store does not overwrite
	// it: it may hold knowledge of second modes.
	os.WriteFile(path, []byte(`{"version": 1, "key": `), 0o644)
	if _, err := load(context.Background(), Dir(dir), c.Key, 0); err == nil || errors.Is(err, ErrNoCalibration) || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("Load(broken file) = %v; want an error saying to remove it", err)
	}
	if err := Store(context.Background(), Dir(dir), c); err == nil {
		t.Errorf("Store over a broken file = nil; want an error")
	}
}

func TestLoadStale(t *testing.T) {
	dir := t.TempDir()
	made := time.Now().Add(-48 * time.Hour)
	c := mustCompute(t, synthBoots(3, 3, "icount", icountRows[:2], 1), Options{Date: made})
	if err := Store(context.Background(), Dir(dir), c); err != nil {
		t.Fatal(err)
	}
	got, err := load(context.Background(), Dir(dir), c.Key, 24*time.Hour)
	if !errors.Is(err, ErrStale) || got == nil || !got.Date.Equal(made) {
		t.Fatalf("Load(made 48h ago, max age 24h) = %v, %v; want the calibration and ErrStale", got, err)
	}
	if _, err := load(context.Background(), Dir(dir), c.Key, 72*time.Hour); err != nil {
		t.Errorf("Load(made 48h ago, max age 72h) = %v; want no error", err)
	}
	if _, err := load(context.Background(), Dir(dir), c.Key, 0); err != nil {
		t.Errorf("Load(max age 0) = %v; want no error (never stale)", err)
	}
}

func TestStoreKeepsTwoModes(t *testing.T) {
	dir := t.TempDir()
	first := mustCompute(t, synthBoots(8, 5, "icount", icountRows, 1), Options{Date: time.Now().Add(-time.Hour)})
	if err := Store(context.Background(), Dir(dir), first); err != nil {
		t.Fatal(err)
	}
	// A later calibration in which TwoModes happened to show one mode.
	calm := []synthRow{
		{name: "TwoModes", median: values(1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000)},
		{name: "Jitter", median: values(1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000.1)},
	}
	second := mustCompute(t, synthBoots(8, 5, "icount", calm, 2), Options{})
	if _, ok := second.Bound("TwoModes", "insn/op"); !ok {
		t.Fatalf("second calibration alone: TwoModes not deterministic; the test needs it to be")
	}
	if err := Store(context.Background(), Dir(dir), second); err != nil {
		t.Fatal(err)
	}
	got, err := load(context.Background(), Dir(dir), second.Key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := got.Bound("TwoModes", "insn/op"); ok {
		t.Errorf("after a calibration with one mode: Bound(TwoModes) = %g, true; want not deterministic (two modes seen before)", b)
	}
	r := row(t, got, "TwoModes", "insn/op")
	if r.Deterministic || !r.EverTwoModes || r.TwoModes || !strings.Contains(r.Why, "two modes seen before") {
		t.Errorf("TwoModes row = %+v; want not deterministic, ever two modes, not now, why says so", r)
	}
	if !got.Date.Equal(second.Date) || len(got.Benchmarks) != 2 || got.Boots != 8 {
		t.Errorf("stored: date %v, %d rows; want the second calibration's date and its 2 rows", got.Date, len(got.Benchmarks))
	}
	if _, ok := got.Bound("Jitter", "insn/op"); !ok {
		t.Errorf("Bound(Jitter) not ok; want the new bounds to stand")
	}
	if len(got.TwoModes) != len(first.TwoModes) || !got.TwoModes[0].Date.Equal(first.Date) {
		t.Errorf("TwoModes = %+v; want the first calibration's records %+v", got.TwoModes, first.TwoModes)
	}
	// Merging never turns a row deterministic, whatever the order.
	if err := first.Merge(second); err != nil {
		t.Fatal(err)
	}
	if _, ok := first.Bound("TwoModes", "insn/op"); ok {
		t.Errorf("first merged with second: Bound(TwoModes) ok; want not")
	}
	other := *second
	other.Key.Rounds = 5
	if err := first.Merge(&other); err == nil {
		t.Errorf("Merge of another key = nil; want an error")
	}
}

// TestLoadRefusesImpossibleRows checks that a stored row Compute could not
// have written (a store is shared or edited by hand) is an error, not a
// jitter bound or a floor.
func TestLoadRefusesImpossibleRows(t *testing.T) {
	dir := t.TempDir()
	c := mustCompute(t, synthBoots(8, 5, "icount", icountRows, 1), Options{})
	i := slices.IndexFunc(c.Benchmarks, func(b Benchmark) bool { return b.Deterministic })
	if i < 0 {
		t.Fatal("no deterministic row to spoil")
	}
	for _, tc := range []struct {
		name  string
		spoil func(*Benchmark)
	}{
		{"bound 0", func(b *Benchmark) { b.Bound = 0 }},
		{"negative bound", func(b *Benchmark) { b.Bound = -0.01 }},
		{"NaN bound", func(b *Benchmark) { b.Bound = math.NaN() }},
		{"infinite bound", func(b *Benchmark) { b.Bound = math.Inf(1) }},
		{"bound at the maximum", func(b *Benchmark) { b.Bound = c.Method.MaxBound }},
		{"floor reached at NaN", func(b *Benchmark) { b.FloorReached, b.Floor = true, math.NaN() }},
		{"floor reached at 0", func(b *Benchmark) { b.FloorReached, b.Floor = true, 0 }},
	} {
		bad := *c
		bad.Benchmarks = slices.Clone(c.Benchmarks)
		tc.spoil(&bad.Benchmarks[i])
		data, err := json.Marshal(&bad)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(Dir(dir).Path(c.Key)), 0o755)
		os.WriteFile(Dir(dir).Path(c.Key), data, 0o644)
		if _, err := load(context.Background(), Dir(dir), c.Key, 0); err == nil || !strings.Contains(err.Error(), "remove it and calibrate again") {
			t.Errorf("Load(%s) = %v; want an error saying to calibrate again", tc.name, err)
		}
	}
	data, _ := json.Marshal(c)
	os.WriteFile(Dir(dir).Path(c.Key), data, 0o644)
	if _, err := load(context.Background(), Dir(dir), c.Key, 0); err != nil {
		t.Errorf("Load(as computed) = %v", err)
	}
}

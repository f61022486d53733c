package compare

import (
	"errors"
	"testing"
)

func TestStart(t *testing.T) {
	opts := Options{Alpha: 0.05, MinEffect: 0.01, MaxBoots: 10}
	chosen, err := StartBoots(opts, 4, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		boots         int
		deterministic bool
		want          int
	}{
		{"given", 3, true, 3},
		{"deterministic", 0, true, DeterministicBoots},
		{"chosen", 0, false, chosen},
	} {
		if got, err := Start(opts, FirstLook{Boots: c.boots, Rows: 4, Deterministic: c.deterministic}); err != nil || got != c.want {
			t.Errorf("Start(%s: boots %d, deterministic %v) = %d, %v; want %d", c.name, c.boots, c.deterministic, got, err, c.want)
		}
	}
	// A bisection's first look must reach both verdicts: never fewer
	// boots than a comparison's, which needs only one.
	both, err := StartBoots(opts, 4, false, true)
	if err != nil || both < chosen {
		t.Fatalf("StartBoots(both) = %d, %v; want at least %d", both, err, chosen)
	}
	if got, err := Start(opts, FirstLook{Rows: 4, Both: true}); err != nil || got != both {
		t.Errorf("Start(both) = %d, %v; want %d", got, err, both)
	}
	if got, err := Start(opts, FirstLook{Rows: 4, Both: true, Deterministic: true}); err != nil || got != DeterministicBoots {
		t.Errorf("Start(both, deterministic) = %d, %v; want %d", got, err, DeterministicBoots)
	}
	for _, c := range []struct {
		maxBoots, boots int
		want            string
	}{
		{0, 2, "max_boots 0 must be between 1 and 200"},
		{201, 2, "max_boots 201 must be between 1 and 200"},
		{10, 11, "boots 11 must be between 1 and max_boots 10"},
		{10, -1, "boots -1 must be between 1 and max_boots 10"},
	} {
		o := opts
		o.MaxBoots = c.maxBoots
		var be *BootsError
		if _, err := Start(o, FirstLook{Boots: c.boots, Rows: 4}); !errors.As(err, &be) || err.Error() != c.want {
			t.Errorf("Start(max %d, boots %d) error = %v; want a BootsError %q", c.maxBoots, c.boots, err, c.want)
		}
	}
}

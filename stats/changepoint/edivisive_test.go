package changepoint

import (
	"math"
	"math/rand/v2"
	"testing"
)

// qByDefinition is Q̂ of Matteson and James written out as sums.
func qByDefinition(z []float64, a, tau, kappa int) float64 {
	x, y := z[a:tau], z[tau:kappa]
	n, m := float64(len(x)), float64(len(y))
	var sxy, sxx, syy float64
	for _, xi := range x {
		for _, yj := range y {
			sxy += math.Abs(xi - yj)
		}
	}
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			sxx += math.Abs(x[i] - x[j])
		}
	}
	for i := range y {
		for j := i + 1; j < len(y); j++ {
			syy += math.Abs(y[i] - y[j])
		}
	}
	e := 2 * sxy / (n * m)
	if n >= 2 {
		e -= sxx / (n * (n - 1) / 2)
	}
	if m >= 2 {
		e -= syy / (m * (m - 1) / 2)
	}
	return n * m / (n + m) * e
}

func TestEnergyMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	z := make([]float64, 17)
	for i := range z {
		z[i] = rng.NormFloat64()
		if i >= 9 {
			z[i] += 5
		}
	}
	e := newEnergy(z)
	for a := 0; a < len(z); a++ {
		for tau := a + 1; tau < len(z); tau++ {
			for kappa := tau + 1; kappa <= len(z); kappa++ {
				got, want := e.q(a, tau, kappa), qByDefinition(z, a, tau, kappa)
				if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("q(%d, %d, %d) = %g; want %g", a, tau, kappa, got, want)
				}
			}
		}
	}
	tau, _, ok := e.candidate(0, len(z), 3)
	if !ok || tau != 9 {
		t.Errorf("candidate(0, %d, 3) = %d, %v; want 9, true", len(z), tau, ok)
	}
	if _, _, ok := e.candidate(0, 5, 3); ok {
		t.Errorf("candidate(0, 5, 3) ok; want no split of 5 nights into two of 3")
	}
}

package changepoint

import "math"

// energy holds, for one window z of the series, the within-run sums of
// pairwise distances W(a, b) = Σ_{a≤i<j<b} |z_i − z_j| for every run
// [a, b) of the window, from which the E-divisive statistic of any split of
// any run follows in O(1). Building it costs O(n²) for a window of n nights.
type energy struct {
	n int
	w []float64 // w[a*(n+1)+b] = W(a, b) for a ≤ b
}

func newEnergy(z []float64) *energy {
	n := len(z)
	e := &energy{n: n, w: make([]float64, (n+1)*(n+1))}
	col := make([]float64, n+1) // col[a] = Σ_{a≤i<c} |z_i − z_c|
	for c := 0; c < n; c++ {
		// W(a, c+1) = W(a, c) + Σ_{a≤i<c} |z_i − z_c|.
		col[c] = 0
		for a := c - 1; a >= 0; a-- {
			col[a] = col[a+1] + math.Abs(z[a]-z[c])
		}
		for a := 0; a <= c; a++ {
			e.w[a*(n+1)+c+1] = e.w[a*(n+1)+c] + col[a]
		}
	}
	return e
}

func (e *energy) within(a, b int) float64 { return e.w[a*(e.n+1)+b] }

// q is the E-divisive statistic of Matteson and James (2014), α = 1, for
// X = z[a:tau] and Y = z[tau:kappa]:
//
//	Q̂ = nm/(n+m) · ( 2/(nm)·Σ|X−Y| − Σ|X−X'|/C(n,2) − Σ|Y−Y'|/C(m,2) ).
func (e *energy) q(a, tau, kappa int) float64 {
	nx, ny := float64(tau-a), float64(kappa-tau)
	sxx, syy := e.within(a, tau), e.within(tau, kappa)
	sxy := e.within(a, kappa) - sxx - syy
	ehat := 2 * sxy / (nx * ny)
	if nx >= 2 {
		ehat -= sxx / (nx * (nx - 1) / 2)
	}
	if ny >= 2 {
		ehat -= syy / (ny * (ny - 1) / 2)
	}
	return nx * ny / (nx + ny) * ehat
}

// candidate is the split of the run [a, b) of the window that maximises Q̂
// over the split τ and the end κ of the compared run, as Otava does since
// it follows the paper's search over κ (apache/otava#96): a step close to
// other steps stands out more against a short run after it than against the
// whole rest of the window. Both sides of the split and the compared run
// must hold at least minSeg nights. Ties go to the earliest τ, then κ, so
// the result is deterministic. ok is false when the run is too short.
func (e *energy) candidate(a, b, minSeg int) (tau int, qmax float64, ok bool) {
	qmax = math.Inf(-1)
	for t := a + minSeg; t+minSeg <= b; t++ {
		for k := t + minSeg; k <= b; k++ {
			if v := e.q(a, t, k); v > qmax {
				tau, qmax, ok = t, v, true
			}
		}
	}
	return tau, qmax, ok
}

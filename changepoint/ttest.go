package changepoint

import (
	"math"

	"github.com/aclements/go-moremath/mathx"
)

// prefixSums answers the mean and variance of any run values[lo:hi] in O(1).
// The values are shifted by the first one before summing, so that series
// whose noise is a tiny fraction of their level (instruction counts:
// 0.03 %) keep their variance instead of losing it to cancellation in
// Σx² − (Σx)²/n.
type prefixSums struct {
	shift float64
	sum   []float64 // sum[i] = Σ_{j<i} (v[j]−shift)
	sq    []float64 // sq[i] = Σ_{j<i} (v[j]−shift)²
}

func newPrefixSums(values []float64) *prefixSums {
	p := &prefixSums{sum: make([]float64, len(values)+1), sq: make([]float64, len(values)+1)}
	if len(values) > 0 {
		p.shift = values[0]
	}
	for i, v := range values {
		d := v - p.shift
		p.sum[i+1] = p.sum[i] + d
		p.sq[i+1] = p.sq[i] + d*d
	}
	return p
}

// segment is the summary of one run of nights that the t-test needs.
type segment struct {
	n    int
	mean float64
	// variance is the sample variance (n−1 denominator); 0 when n < 2.
	variance float64
}

func (p *prefixSums) segment(lo, hi int) segment {
	n := hi - lo
	if n <= 0 {
		return segment{}
	}
	s := p.sum[hi] - p.sum[lo]
	m := s / float64(n)
	var v float64
	if n >= 2 {
		ss := p.sq[hi] - p.sq[lo]
		v = (ss - s*m) / float64(n-1)
		if v < 0 { // rounding
			v = 0
		}
	}
	return segment{n: n, mean: m + p.shift, variance: v}
}

// floorDF is how many nights' worth of evidence the noise floor counts
// for when it is pooled with a segment's own variance (see flooredWelch).
const floorDF = 20

// flooredWelch is a two-sided Welch t-test of the means of two segments
// whose variances are held above a floor: (noiseFloor·|mean|)², the
// measured relative noise of one night expressed on that segment's level.
//
// With a floor, each segment's variance is the larger of the floor and the
// floor pooled with the segment's sample variance as if the floor were an
// estimate from floorDF nights, (floorDF·f + (n−1)·s²)/(floorDF+n−1), with
// floorDF+n−1 degrees of freedom. A short segment, such as the few newest
// nights after a step, is then tested mostly with the measured noise
// (plain Welch would give three nights two degrees of freedom, and a 5σ
// step p = 0.03); a long segment mostly with its own, so a floor that is
// too low does not make long segments overconfident. The floor also
// removes the division by zero of a constant series: instruction counts
// are deterministic to 0.03 % and can repeat the same value for months.
//
// Without a floor (noiseFloor 0) it is plain Welch, and a segment of one
// night, which has no variance of its own, takes the other segment's (the
// equal-variance assumption, the only one available). Zero variance on
// both sides then gives p = 1 for equal means and p = 0 otherwise: only the
// minimum magnitude stands between such a series and a change point.
func flooredWelch(a, b segment, noiseFloor float64) (t, p float64) {
	type side struct{ v, df float64 }
	mk := func(s segment) side {
		if noiseFloor == 0 {
			if s.n < 2 {
				return side{0, 0}
			}
			return side{s.variance, float64(s.n - 1)}
		}
		f := noiseFloor * s.mean
		f *= f
		own := float64(max(s.n-1, 0))
		pooled := (floorDF*f + own*s.variance) / (floorDF + own)
		return side{math.Max(f, pooled), floorDF + own}
	}
	sa, sb := mk(a), mk(b)
	shared := false // one side uses the other's variance estimate
	if sa.df == 0 {
		sa, shared = sb, true
	}
	if sb.df == 0 {
		sb, shared = sa, true
	}

	ea, eb := sa.v/float64(a.n), sb.v/float64(b.n)
	se2 := ea + eb
	d := b.mean - a.mean
	if !(se2 > 0) {
		if d == 0 {
			return 0, 1
		}
		return math.Copysign(math.Inf(1), d), 0
	}
	t = d / math.Sqrt(se2)
	var df float64
	if shared {
		// One estimate on both sides: its own degrees of freedom, not the
		// Welch–Satterthwaite sum, which would count it twice.
		df = sa.df
	} else {
		df = se2 * se2 / (ea*ea/sa.df + eb*eb/sb.df)
	}
	return t, twoSidedT(t, df)
}

// twoSidedT is P(|T| ≥ |t|) for Student's t with df degrees of freedom,
// computed from the incomplete beta function directly so that p-values far
// below 1e-16 keep their precision (1−CDF would round them to 0).
func twoSidedT(t, df float64) float64 {
	if math.IsInf(t, 0) {
		return 0
	}
	if math.IsInf(df, 1) || df > 1e7 {
		return math.Erfc(math.Abs(t) / math.Sqrt2)
	}
	p := mathx.BetaInc(df/(df+t*t), df/2, 0.5)
	if p > 1 {
		p = 1
	}
	if p < 0 || math.IsNaN(p) {
		p = 0
	}
	return p
}

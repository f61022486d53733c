package wire

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"unicode"
	"unicode/utf8"

	"golang.org/x/perf/benchfmt"
)

// A guest is untrusted: a stream whose trailer proves it arrived whole can
// still lie. Decode vets every complete stream (vet) and CheckPlan vets it
// against the plan the host asked for; a stream that fails either is not
// Complete but Rejected, with Problem saying why, so that its boot counts
// as failed and no verdict is computed from it. The threat is to the host
// and to the integrity of verdicts, not to the truth of every number: a
// guest can still report a plausible wrong value, which no decoder can tell.

// maxValue bounds every value of a result: 10^12 nanoseconds (a thousand
// seconds) or instructions per operation, far above any benchmark's, far
// below where float64 sums and ratios lose meaning.
const maxValue = 1e12

// hostKeys are the configuration keys only the host writes (see Key*): a
// guest that writes one could pass its results off as another side's,
// boot's, pair's or role's, or change the bounds a comparison is decided
// with, since the host sets some of them only when it has a value. KeyKernel
// and KeyAccel are the guest's, and the host replaces them on every result.
var hostKeys = []string{KeySide, KeyBoot, KeyPair, KeyImage, KeyOrderSeed, KeyQEMU, KeyCPUModel, KeyAppend,
	KeyVersion, KeyParams, KeyDate, KeyCommit, KeyCompiler, KeyKconfig, KeyJitterBounds, KeyMinEffects, KeyRole, KeyPhases}

// vet returns why a stream that arrived whole must still be rejected, ""
// when nothing is wrong: a value that is not a finite number in [0,
// maxValue], an iteration count below 1, a configuration key of the host,
// or a name, unit, key, value or note that is not printable UTF-8 (terminal
// escape sequences, invalid bytes).
func (s *Stream) vet() string {
	for _, r := range s.Results {
		name := resultName(r)
		if why := unprintable(string(r.Name)); why != "" {
			return fmt.Sprintf("a result's name %s", why)
		}
		if r.Iters < 1 {
			return fmt.Sprintf("%s: %d iterations", name, r.Iters)
		}
		for _, v := range r.Values {
			if why := unprintable(v.Unit); why != "" {
				return fmt.Sprintf("%s: a unit %s", name, why)
			}
			if math.IsNaN(v.Value) || v.Value < 0 || v.Value > maxValue {
				return fmt.Sprintf("%s: value %s %s is not in [0, %g]", name, strconv.FormatFloat(v.Value, 'g', -1, 64), v.Unit, float64(maxValue))
			}
		}
		for _, c := range r.Config {
			for _, k := range hostKeys {
				if c.Key == k {
					return fmt.Sprintf("%s: the guest wrote the host's key %q", name, k)
				}
			}
			if why := unprintable(c.Key); why != "" {
				return fmt.Sprintf("%s: a configuration key %s", name, why)
			}
			if why := unprintable(string(c.Value)); why != "" {
				return fmt.Sprintf("%s: the value of %q %s", name, c.Key, why)
			}
		}
	}
	for _, n := range s.Notes {
		if why := unprintable(n.Key + n.Text); why != "" {
			return fmt.Sprintf("a note %s", why)
		}
	}
	return ""
}

// unprintable says what makes s unfit to print, "" when nothing: invalid
// UTF-8, or a control character other than a tab (escape sequences start
// with one: ESC, CSI).
func unprintable(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if r != '\t' && unicode.IsControl(r) {
			return fmt.Sprintf("has control character %U", r)
		}
	}
	return ""
}

// reject marks a stream rejected for why.
func (s *Stream) reject(why string) {
	s.Complete, s.Rejected = false, true
	s.Problem = "rejected: " + why
}

// CheckPlan rejects a complete stream with a result the plan did not ask
// for: one whose name (without "Benchmark") Plan.Bench does not match, as
// the guest selects its benchmarks by their full names.
func (s *Stream) CheckPlan(p Plan) {
	if !s.Complete {
		return
	}
	re, err := regexp.Compile(p.Bench)
	if err != nil {
		s.reject(fmt.Sprintf("the plan's %s does not compile: %v", ParamBench, err))
		return
	}
	for _, r := range s.Results {
		if !re.Match(r.Name) {
			s.reject(fmt.Sprintf("result for %s, which %s=%s did not ask for", resultName(r), ParamBench, p.Bench))
			return
		}
	}
}

// resultName is the name a result is written with.
func resultName(r *benchfmt.Result) string { return "Benchmark" + string(r.Name) }

// Package calibrate measures what this host's instrument can resolve, from
// boots of one kernel image compared with itself, and keeps the result in
// the cache, per host, accelerator, QEMU version, emulated CPU model and
// run plan, for comparisons to use.
//
// A calibration boots one image many times and reduces every boot, per
// benchmark and unit, to the median of its samples, as package compare
// does: the boot is the unit of measurement. From those boot medians it
// derives two different things, one per kind of clock.
//
// # Jitter bound (icount)
//
// Under icount the guest clock counts instructions, and two boots of one
// image agree to a few hundredths of a percent: what is left is jitter
// from timer interrupts landing in the measured loop and from where the
// kernel places things at boot. For every pair of boots i, j the relative
// difference of their medians is max(m_i, m_j)/min(m_i, m_j) − 1 (the
// larger of |m_i/m_j − 1| and |m_j/m_i − 1|). The jitter bound is
//
//	bound = max(BoundFloor, SafetyFactor × Quantile(pairwise, Q))
//
// with Q = 0.95, SafetyFactor = 3 and BoundFloor = 0.0003 (0.03 %) by
// default. A high quantile rather than the largest difference keeps one odd
// pair among many from setting the bound alone, and the safety factor
// covers what a handful of boots has not yet shown: with 8 boots there are
// 28 pairs, but only 8 independent boots, so the quantile is itself an
// estimate from a small sample. Measured here (Debian 6.12, icount, 5
// samples × 5 rounds, QEMU 7.2 on Westmere-v1): the random-key lookups'
// boot medians spanned 0.037 % and 0.035 % in two calibrations of 8 boots
// (bounds 0.091 % and 0.082 %), and 0.039 % over all 16 boots. Of all
// subsets of those 16 boots, the bound of a subset fell below the span of
// the 16 for 0.4 % of the subsets of 8 boots (11 % with a safety factor of
// 2), 3.8 % of 6, 15 % of 4 and 31 % of 3: hence DefaultBoots and the
// factor 3. Sequential lookups, noop and baseline gave the same median,
// to the last digit or one step of it, in every boot of 6.1 and 6.12 at 5
// and at 20 rounds. The floor is for such rows, which gave no pairs to
// scale: it allows 3 in 10000 instructions, a little more than the random
// lookups spanned over 16 boots at 20 rounds (0.024 %). A row's floor is
// also at least two steps of the values' rounding (Quantum, 0.01: the
// guest writes two decimals) relative to its centre, since two medians one
// step apart may be one value rounded two ways (0.11 % for the noop
// control at 18 insn/op). For the deterministic
// rule a generous bound is cheap: it only narrows what can be called SAME
// or DIFFERENT by the bound, next to minimum effects of 1 % and more; a
// bound too small makes rows fall back to the statistical rule, which
// costs boots.
//
// A benchmark is Deterministic only when its largest pairwise difference
// stays below MaxJitter (0.5 %), its bound below MaxBound (0.5 %: a bound
// near the minimum effect leaves the rule nothing to decide), it ran in
// every boot, and its boot medians show no second mode. The mode test
// sorts the medians, splits them at their largest gap into a lower and an
// upper group, and reports two modes when the gap is larger than ModeGap
// (3) times the larger group's own range and larger than the row's floor
// relative to the centre (a gap below the resolution is not a mode), and
// both groups hold at least 2 boots, or one holds a single boot whose gap
// exceeds MaxJitter: a rare mode shows once, and a lone boot that close
// instead enters the quantile and widens the bound. On Debian 6.12 (20
// rounds) the test found the syscall-path lookups of an 8192-entry trie
// split 3 to 5 by 0.47 % (insn/lookup), and an empty trie's syscall
// baseline once 12 % above the other 7 boots. Two agreeing boots do not
// prove that there is no second mode: a second mode may be rare. So a
// benchmark that ever showed two modes for a key stays non-deterministic
// for that key: Store merges the new calibration with the stored one and
// keeps every benchmark ever seen with two modes (Calibration.TwoModes).
//
// # Smallest change ruled out (wall time)
//
// Under wall time (tcg, kvm: sec/op once benchfmt tidies ns/op) boots
// differ by percents, and what matters is the smallest minimum effect at
// which a comparison of this host can say SAME for a kernel against
// itself. Calibration simulates those self-compares: it splits the n boots
// into two halves of k = n/2 (one boot left out when n is odd), labels one
// half A and the other B, and, for each minimum effect m of a grid (1, 2,
// 3, 5, 7.5, 10, 15, 20, 30, 40, 50 %), runs the comparison as compare runs it
// (compare.DecideWithin): from the boots an adaptive run starts at, one
// boot per look, α spent over the looks as in a run capped at MaxBoots
// (the comparisons' max_boots), up to k boots per side, with m as each
// benchmark's own minimum effect, as --min-effect auto gives it. So the
// floor is computed under the rule that uses it: floors computed from one
// look with all of α are too small for adaptive runs, which spend α over
// their looks (TCG self-compares of 6.1 stayed UNKNOWN at such a floor of
// the random lookups in 5 of 5 runs; TestFloorHoldsForAdaptiveRuns shows
// the gap on synthetic boots: 38–50 % SAME at one-look floors, 88–98 % at
// these). With n ≥ 2·MaxBoots the simulated runs reach the cap itself;
// with fewer they stop short of it, which only makes the floor larger.
// The floor of a row is the smallest minimum effect at which at least
// SameShare (90 %) of the splits say SAME; Floor is NaN (FloorReached
// false) when none does. When there are at most Splits (200) distinct
// splits they are all taken (8 boots give 35), otherwise Splits are drawn
// with a seeded generator.
//
// The splits are not independent experiments: they are arrangements of one
// pool of n boots, and each boot is in half of them. One slow boot therefore
// sits on one side of every split that contains it, and the share of SAME
// over the splits measures how the pool's own spread looks at k boots per
// side, not the chance that fresh boots would say SAME. The floor is thus
// an estimate with the uncertainty of n boots, however many splits are
// taken; more splits only make the share smooth. It holds for k boots per
// side: a comparison with more boots can rule out smaller changes, one
// with fewer only larger ones. The same splits count DIFFERENT claims
// (FalseDifferent), which for a kernel against itself must stay near 0.
//
// The floor is computed under icount too: it is what the statistical rule,
// to which a row falls back when it is not deterministic, can rule out.
//
// For paired comparisons (tcg, kvm with --paired) Run boots the kernel in
// pairs with itself, as A and B of a paired comparison run, and the
// self-compares are paired ones: subsets of k = n/2 of the n pairs (at
// most MaxBoots), each tested as compare tests pairs (signed ranks of the
// pairs' ln(B/A), α spent over looks), drawn as the splits are. Host noise
// that moves both VMs of a pair alike then stays out of the floor: on our
// shared host one evening, unpaired TCG boots of one image were 62–215 %
// apart and no lookup floor was reached up to 50 %, while the pairs of a
// self-compare changed by −9 to +15 %. The key keeps paired and unpaired
// calibrations apart.
//
// # Keys and storage
//
// A Key names what the bounds hold for: the host (name, CPU model, CPU
// count), the accelerator, the QEMU version and the CPU model it emulated
// (from the results' qemu and cpu-model keys), and the plan: samples and
// rounds (from the results' samples and rounds keys) and whether
// comparisons run in pairs. The kernel is not part of the key: the point
// of a calibration is to serve comparisons of other kernels. Each key has
// one JSON file under <cache>/calibration/; a new calibration replaces the
// bounds of the old one but keeps its knowledge of second modes, so the
// file stays small.
package calibrate

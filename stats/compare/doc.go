// Package compare compares benchmark results from two kernels, A and B, with
// the statistics of benchstat (golang.org/x/perf/benchmath), using the boot as
// the statistical unit.
//
// It returns data, a Report of rows with their verdicts, p-values and
// per-boot summaries, and prints nothing: as x/perf keeps benchmath apart
// from benchstat's tables, package report renders a Report (the terminal
// table, headlines, Markdown, JSON, HTML) and holds every number format and
// explanation they share.
//
// # Why the boot is the unit
//
// Samples taken in one boot share the kernel's memory layout, KASLR offsets,
// the placement of the map in memory and the state of the host around that
// VM. They are not independent: five samples from one boot say much less than
// five boots. A test that counts samples as units declares a difference as
// soon as one boot happened to land on a lucky layout and delivered many
// samples. Build therefore reduces every boot to one number, the median of its
// samples, and runs the statistics on those per-boot medians. The price is
// that the number of units is the number of boots, which are expensive.
//
// # Why medians
//
// Build uses benchmath.AssumeNothing: the centre is the median and the
// comparison is the Mann-Whitney U test, which assume no distribution.
// Benchmarks in a VM have outliers (a host interrupt, a TCG translation-block
// flush) that drag a mean; a median ignores them. The per-boot summary is a
// median for the same reason.
//
// # How many boots
//
// The U test is exact and discrete: with α = 0.05 and fewer than 4 boots per
// side, no p-value can fall below α, whatever the data, and the corrections
// below raise that minimum (minBootsToDecide). A distribution-free 95 %
// confidence interval for a median needs at least 6 values; with fewer, its
// bounds are infinite. Rows say so in their notes instead of printing a
// silent "~" or "±∞". benchstat's own advice is 10 to 20 runs per side.
//
// The spread of samples within a boot (Summary.WithinBoot) is kept next to
// the between-boot interval: when the interval is much wider than the
// within-boot spread, more samples per boot will not help, only more boots.
//
// # Verdicts
//
// Every compared row gets one of three verdicts, decided on the per-boot
// medians:
//
//   - DIFFERENT: the Mann-Whitney U test of benchmath (the p-value benchstat
//     prints) is significant after correcting for the number of rows (Holm)
//     and for repeated looks at the data (α-spending), AND the change is shown
//     to exceed the minimum effect: the same U test of B against A scaled by
//     1±MinEffect is significant too (Row.PEffect). Significance alone is not
//     enough: a deterministic mode (instruction counts) makes any 0.05 %
//     wobble significant. A point estimate beyond the minimum effect is not
//     enough either: with boot-to-boot noise of a few percent, medians of one
//     kernel's boots differ by more than 1 % all the time.
//   - SAME: an equivalence test (TOST, two one-sided U tests) shows that B
//     lies within ±MinEffect of A: B is significantly below A·(1+MinEffect)
//     and significantly above A·(1−MinEffect). A large p-value is not
//     evidence of sameness; this is.
//   - UNKNOWN: neither. The honest answer when the boots taken cannot tell a
//     change of the minimum effect from the noise; the row then says about
//     how many boots per side a decision would need.
//
// A change has a Direction (Row.Direction, DirectionOf): Worse or Better by
// its unit (betterOf: costs per operation lower is better, rates higher),
// or Changed when the unit has no known direction or nothing moved. Reports
// call a Changed change neither better nor worse; CI under FailOnRegression
// still fails a DIFFERENT row whose unit has no known direction
// (Row.Worse), since it cannot judge it.
//
// # Error control
//
// What must never happen is DIFFERENT for a kernel compared with itself. A
// comparison tests several rows (the selected benchmarks and the controls),
// and an adaptive run tests them again each time it adds boots. With
// benchstat's plain p <= 0.05, four rows and four looks flag 25 % of
// simulated self-comparisons under TCG wall-time noise (sim_test.go). Two
// corrections keep the family-wise error of DIFFERENT claims at α for the
// whole run (0.6 % in the same simulation, with the effect test):
//
//   - Across rows, Holm's step-down procedure at the look's level: the
//     smallest p is compared with level/m, the next with level/(m−1), and so
//     on. It holds under any dependence between rows, which matters because
//     one noisy boot slows every benchmark in it.
//   - Across looks, a Pocock-type α-spending function (Lan and DeMets): once
//     n of at most MaxBoots boots per side are in, a total of
//     α·ln(1+(e−1)·n/MaxBoots) may have been spent, and a look may use what
//     is left of that. By the union bound the chance of any false DIFFERENT
//     over all looks is at most α, whatever the correlation between looks.
//     The Pocock shape spends early, so a large effect is called at the first
//     look. A look at which no row could possibly reach DIFFERENT (the U test
//     is discrete: 4+4 boots cannot give p below 0.029) spends nothing, so
//     starting small costs no α.
//
// SAME claims have their own budget of α, spent over looks the same way but
// not divided among rows: each row's equivalence test runs at the look's
// level. The claim that matters for CI, "no benchmark changed", is the
// conjunction of the rows' SAME claims, and an intersection-union test needs
// no multiplicity correction (Berger 1982): it holds at α when every part
// does. The price is that a single row's SAME is a per-row, not family-wise,
// statement.
//
// # Floors of one benchmark
//
// Options.MinEffects raises the minimum effect of single benchmarks above
// Options.MinEffect: lpmbisect calibrate measures the smallest change each
// benchmark's boots can rule out on a host, and --min-effect auto gives a
// row the larger of that floor and the user's. A raised floor makes SAME
// coarser ("within ±50 %") and DIFFERENT harder ("beyond ±50 %"); it must
// not make a change the user's own floor sees look like no change. So a
// row whose floor was raised, whose U test (or signed-rank test) is
// significant at α and whose change lies beyond Options.MinEffect stays
// UNKNOWN where it would have been SAME (Row.FloorHides), and its notes say
// that the floor is too close to the change to show it. This withholds a
// claim and makes none, so it spends no α; for a kernel against itself it
// happens at most as often as the U test is significant at α, and the
// calibration's self-compares run with it, so the floors count it.
//
// # Pairs
//
// Under TCG wall time on a shared host the per-boot medians wander by
// ±10–15 % with host state (what the neighbours on the physical core do),
// far more than a 1 % minimum effect. A paired run boots A and B in pairs: boot i of A
// and boot i of B are alive at the same time, pinned to one host CPU, and
// take their samples alternately, step by step, in a random order within
// each step; every result carries the round as wire.KeyPair. Host state then
// moves both VMs of a pair alike and cancels in the ratio B_i/A_i, so the
// pair is the unit: each row reduces pair i to d_i = ln(B_i/A_i) of the two
// boots' medians and tests the d_i with the exact Wilcoxon signed-rank test
// (zeros dropped, ties by average ranks). Under "no change" the random order
// within each step makes A and B exchangeable within a pair, so every d_i is
// as likely to be positive as negative, whatever the host did; the
// signed-rank test's null distribution is exactly that flipping of signs,
// which makes it the exact randomization test of the design. DIFFERENT,
// SAME (tests of d against ln(1±MinEffect)), Holm and the α-spending work
// as above with pairs in place of boots per side, and the change shown is
// the median over pairs, 100·(exp(median d)−1). A pair in which one side's
// boot failed is left out of a row with a note; the sides' summaries still
// count every boot.
//
// The price is fewer units for the same boots. n pairs give the signed-rank
// test 2^n equally likely sign patterns where n+n unpaired boots give the U
// test C(2n,n) orderings, so the smallest p-values are 2/2^n against
// 2/C(2n,n): 0.031 for 6 pairs, 0.0022 for 6+6 boots. At α = 0.05 with 4
// rows and at most 10 pairs, SAME needs at least 6 pairs and DIFFERENT 8
// (minPairsToDecide), against 4 and 6 boots per side unpaired. Pairing pays
// when the host noise it cancels is larger than the noise left in the
// ratio, as it is under TCG wall time on a shared host. What pairs cannot
// cancel is state each VM draws for itself, such as where the kernel put
// a benchmark's JIT code or trie nodes (see docs/verdicts.md, "TCG wall time").
//
// # Deterministic rows
//
// Under icount the counts are deterministic: two boots of one image agree
// within a few hundredths of a percent, so a statistical test would call
// any wobble significant and need 6+6 boots to say what two boots show.
// A benchmark that calibration found deterministic (lpmbisect calibrate:
// boots of one image never differed by more than a bound b, and never in
// two modes) has its bound in Options.Bounds, and its row is decided by the
// deterministic rule from two boots per side: DIFFERENT when the change
// exceeds the row's minimum effect by more than b and the sides' boots do
// not overlap, SAME when the change plus b stays inside the minimum effect,
// and UNKNOWN at once and for good (Row.Final) when the change lies within b
// of the minimum effect, since more boots would only repeat the values.
// The rule makes no probabilistic claim: it spends no α, its rows are
// outside the Holm family of the statistical rows, and its claims' p-values
// are 0. If a side's own boots disagree by more than b, the calibration did
// not see this (a second mode, another kernel's behaviour) and the row falls
// back to the statistical rule, with the look's level as any other row. A
// kernel compared with itself differs by its jitter, at most b < e + b, so
// the rule never calls it DIFFERENT. Row.Rule says which rule decided each
// row, and the report says it too. A count that is 0 in every sample of
// both sides has no relative change, but no change either: with a bound
// and two boots a side the rule calls it SAME. A 0 on side A only (0 → n)
// stays UNKNOWN: no bound covers a change from nothing.
//
// A count measured once per side outside the timed samples (the memory
// pass's misses per operation under icount) is an exact row (ExactRow,
// Row.Exact): one value per side, decided by decideExact at its own
// minimum effect and jitter bound, final. Its DIFFERENT fails a comparison
// as any row's does (Outcome); its UNKNOWN does not make it inconclusive.
//
// Instruction counts depend on the emulated CPU model and the QEMU version:
// Build refuses to compare icount results whose sides (or whose boots on one
// side) record different ones (ErrIncomparable).
//
// # Adaptive runs
//
// An adaptive run adds boots while rows are undecided and compares all the
// results so far after each step: every comparison is a look at the data,
// and every look must spend α as the earlier ones did. adaptive.go holds the
// one implementation every command uses:
//
//   - Decide runs a comparison of A with B to its end: it starts at the
//     boots per side its caller gives (StartBoots: the fewest at which a
//     verdict is possible), looks after every boot added per side and stops
//     when no selected row is UNKNOWN (Report.NeedMoreBoots) or at
//     Options.MaxBoots.
//   - Sequence is one comparison's memory across looks: it keeps MaxBoots
//     fixed and hands each look what the earlier ones spent and decided
//     (Options.Previous). A caller that makes several comparisons per step,
//     as a bisection judging a commit against both endpoints, keeps a
//     Sequence for each.
//   - Adaptive is the stop rule alone: bring every kernel to Start boots
//     through a Source (package measure boots the kernels), look, and add
//     Step boots while the look asks for more, up to MaxBoots.
//
// A caller that calls Build for each look itself must pass the previous
// Report.Look as Options.Previous and keep MaxBoots fixed: forgetting
// Previous spends α afresh at every look and breaks the error control.
// Verdicts reached at a look are kept by later ones.
//
// # Notes
//
// Row.Notes say in words what limits a row: too few boots for an interval
// or for a verdict at this look's level, a side or a pair missing,
// benchmath's own warnings, a control's move weighed against the
// benchmarks. They are sentences built here, not typed facts for package
// report to phrase. Most carry numbers that exist only inside the decision
// (the smallest p the test could give, the Holm level of the look, how
// many rows share α, which pair was left out), and benchmath hands over
// its warnings as prose errors too; a type per kind of note would add a
// dozen kinds and a phrase table to print the same words. The notes use
// plain fmt verbs; the formats of the values that tables and headlines show
// (changes, p-values, intervals) are report's. What more boots would
// decide is not a note but data, Row.NeedFor and Row.BootsNeeded, which
// report phrases after a row's notes.
//
// # What the rule cannot do
//
// The U test compares locations assuming boots of one side are exchangeable
// with boots of the other under "no change". Interleaving the boots in a
// randomized order is what makes that true on a host whose load drifts; the
// statistics cannot repair a design that runs all A boots first. The
// signed-rank test of a paired run likewise needs the order of A and B
// within each step to be random: a pair that always samples A first can
// shift every d_i the same way.
package compare

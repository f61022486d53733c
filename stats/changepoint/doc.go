// Package changepoint finds the nights at which a nightly benchmark series
// moved to a new level: a deterministic change-point pass in the spirit of
// Apache Otava (ex-Hunter; Fleming et al., "Hunter: Using Change Point
// Detection to Hunt for Performance Regressions", ICPE 2023, arXiv
// 2301.03034) over one value per night, such as the night's centre of a
// benchmark relative to a fixed reference kernel, or the reference alone.
// The night's own comparison gives the prompt alert; this pass confirms,
// locates and de-duplicates the steps over the history.
//
// # The pass
//
//  0. Excursions: nights that lie far from the levels on both sides of
//     them (below) are left out, and the pass runs on the other nights.
//  1. Split. E-divisive means (Matteson and James 2014, α = 1) in windows of
//     Options.Window nights that overlap by half, on a fixed grid from the
//     first night, plus one window that ends at the newest night. In each
//     window the run with the largest energy statistic Q̂, searched over the
//     split τ and the end κ of the compared run as Otava does since
//     apache/otava#96, is split at τ if a t-test of the run's two sides
//     accepts it at 10·P ("weak" change points), and the search recurses
//     until a split is rejected. Every side of a split has at least
//     Options.MinSegment nights. Windows bound the cost (O(N·Window) per
//     pass) and let several close steps each be the strongest in some
//     window.
//  2. End of the series: the best split among the newest MinSegment−1
//     nights, which the windows cannot propose (below).
//  3. Merge, Otava's second step: the candidates' statistics are computed
//     over the segments between neighbouring candidates, and the worst one
//     is removed and its neighbours recomputed until all stand: first, of
//     two candidates closer than MinSegment, the one that splits the joined
//     segment worse on its own; then any whose p-value exceeds P; then any
//     whose relative change of the means is below Options.MinMagnitude.
//  4. Refine: each change point moves, by at most DefaultMatchDistance
//     nights, towards the split between its neighbours, within half a
//     window of it, that separates the means best by least squares; then
//     merge again.
//
// The acceptance test is a t-test, as in Otava, not MongoDB's permutation
// test (Daly et al., ICPE 2020): it is deterministic, fast, and can reach
// the small levels below (100 permutations cannot give a p-value below
// 1/101). It is Welch's two-sided test with two changes for nightly data:
// each segment borrows up to 20 nights' worth of variance from the segment
// across the split, and its variance is at least the floor
// (Options.NoiseFloor·mean)², the measured noise of one night. It tests
// raw means and variances, which one bad night can ruin: leaving the
// excursions out is what keeps it from that.
//
// # Zero variance
//
// Under icount instruction counts are deterministic (CV ≈ 0.03 %) and a
// series can repeat one value for months; a t-test of two constant segments
// divides by zero. The floor is the caller's measured noise of that
// benchmark as a relative standard deviation (0.0003 for icount; the TCG
// wall-time figures below); with it a constant series has p = 1 and a 1 %
// step on a 0.03 % floor is 33σ. Without a floor, two constant segments
// give p = 0 for any difference and only MinMagnitude decides. The
// borrowed variance keeps a floor that is too low from making the newest
// nights overconfident: with a floor 2.5 times too low the nightly false
// alarms stay near 0.1 per series-year (table below), where trusting the
// floor for short segments gave 23.
//
// # The newest nights
//
// The end of the series is where a nightly's newest regression sits and is
// where E-divisive is weakest: it is unstable near the ends of a segment,
// and a minimum segment length, the usual cure, delays every detection by
// about half that length (apache/otava#150; #152 collects the related
// work, #154 a deterministic variant). Here the interior keeps segments of
// at least MinSegment = 3 nights, so an excursion of one or two nights is
// an outlier and not two steps, but the newest segment may be one or two
// nights long: the end-of-series check proposes the best such split and
// merge accepts it only at the stricter Options.EndP = P/10, because the
// check tries those splits again every night. Such a change point is
// Provisional; it is confirmed, at P, once MinSegment nights follow it, or
// withdrawn if they return to the old level.
//
// The delay this causes: a step of δ noise standard deviations is reported
// provisionally on the k-th night at the new level when δ·√k exceeds
// about 5.8 (t at EndP with some 20 degrees of freedom), and confirmed from
// the third night when δ·√k exceeds about 4.7. So a step of 6σ or more is
// reported the night it appears (under icount every step above the 1 %
// minimum magnitude is at least 33σ), one of 4.1σ the next night, and a 3σ
// step (3 % under 1 % noise) two nights later: measured medians 0 and 2
// nights, table below. The price is that one bad night of more than about
// 6σ at the very end reads as a provisional change point until the next
// night makes it an excursion (below); a caller that mails only confirmed
// change points waits MinSegment−1 = 2 more nights.
//
// # Bad nights
//
// A t-test of raw nightly values goes blind after one bad night. Issue
// 26's public series (one value a night, a 5 % minimum effect) had a clean
// −12 % step, each night within about ±1 %, and one night at −41 % five
// nights before it: that night raised the standard deviation of the
// segment before the step from about 150 to 2900, and at P = 1e-4 the
// step was rejected for as long as the bad night stayed in its segment.
// Real series have such nights: a host hiccup, a half-failed boot under
// wall time, a night whose reference boots were disturbed. Four cures were
// weighed:
//
//   - A rank test (Mann-Whitney) of the two sides sees where a night lies,
//     not how far. Its smallest two-sided p-value is 2/C(n₁+n₂, n₂): in a
//     window of 30 nights a new level of k nights reaches EndP = 1e-5 only
//     from k = 6 (C(30, 5) = 142506 gives 1.4e-5) and P = 1e-4 from k = 4,
//     where a step of 6σ or more is now reported the night it appears
//     (10 % steps under 1 % noise: median delay 0). And icount's constant
//     series are all ties: ranks say nothing there, and the noise floor has
//     no place in them.
//   - Trimmed or winsorized means, or a robust scale (MAD) for Welch's
//     variance, need each segment's order statistics: no prefix sums,
//     O(n log n) per test instead of O(1), in a pass that tests every
//     split of every window every night. And they cannot help where a bad
//     night hurts most: alone in a newest segment of one night, or as the
//     newest night, which widens the segment before it until the change
//     point there is withdrawn.
//   - Leaving the bad nights out: a night far from the levels on both
//     sides of it is an excursion, and the pass runs, as before, on the
//     other nights. The test, its floor, its borrowed variance and their
//     calibration stay as they were (the clean rows of the tables below
//     are unchanged), finding them costs O(N) a pass, and the nights left
//     out are what the history shows: one rule for both.
//
// The last was chosen. A run of one night or two (fewer than MinSegment)
// is an excursion when each of its nights lies, in one direction, more
// than Options.ExcursionSigmas noise standard deviations (default 4) and
// at least MinMagnitude from both neighbouring levels, the medians of up
// to 5 nights on either side (without the excursions found before), and
// neither the night before it nor the night after it departs in that
// direction too (else the run is longer, and three nights are a level).
// The noise is the larger of the floor and Noise, the series' own
// night-to-night noise (robust to steps and to bad nights), so that a floor
// set too low does not flag ordinary nights. Excursions returns them. A
// change point never sits on one, its segments' means leave them out, and
// its range starts at the last night of the old level
// (ChangePoint.LastBefore): a bad night may hide which kernel moved.
//
// The newest nights cannot be excursions: until a night back at a level
// follows them they may be the first nights of a step, and the
// end-of-series check reports them, provisionally, as before. But while
// they depart from the level before them they belong to it no more than to
// a new one: unless the end-of-series check makes them a change point, the
// pass leaves them out of the segment before them, so that a bad newest
// night does not withdraw the change point before it either (it did: it
// widened that segment's variance). A bad newest night is still reported,
// provisionally, and is an excursion the next night. The oldest nights,
// with no level before them, are an excursion only once MinSegment nights
// after them make a level: a series of two nights apart may as well be a
// step at the second.
//
// Under instruction counts, which do not wander, an excursion is not
// noise: it is a kernel that was different that night (a commit reverted
// the next day, a build from another branch). It is kept out of the
// levels, not out of sight: the history keeps it with its boots, and says
// what it is.
//
// What it costs. The threshold trades bad nights missed for ordinary
// nights flagged (go run ./stats/changepoint/internal/cpsim -table excursions
// sweeps it; 300 series per row, seed 1; confirmed false change points
// per series-year with 1 % bad nights, ordinary nights flagged per
// series-year on clean series, and 3 % steps under 1 % noise with 1 % bad
// nights, confirmed):
//
//	threshold    null 2 %: confirmed  null 5 %: confirmed  clean 2 %: flagged  clean 5 %: flagged  3 %: recall  precision  delay
//	3σ           0.027                0.083                0.710               0.723               0.998        0.945      2, 4
//	3.5σ         0.020                0.093                0.120               0.117               0.998        0.979      2, 4
//	4σ (default) 0.040                0.130                0.010               0.013               0.998        0.979      2, 4
//
// Below 4σ, ordinary nights are flagged 12 to 70 times as often (0.12 and
// 0.71 a series-year at 2 % noise) for a few fewer false change points (the
// 5σ, 6σ and raw rows of the sweep were not rerun with the current pass;
// the outliers table below has the raw values). At 4σ and 1000 series
// (below): 0.014 ordinary nights per series-year at TCG's 2 % noise and
// none under icount, while 97.8 % and 99.5 % of the bad nights are flagged.
// A bad night within 4σ of its neighbours (10 % under 5 % noise is 2σ) is
// not flagged and stays in the statistics; two such nights in a row can
// still confirm a false change point once MinSegment nights follow the
// first of them (the rows at 5 % noise below). Pooling the two nights of a
// pair (each 4/√2 σ out) caught more of those, but flagged ordinary nights
// beside 3 % steps, and as the measured noise moved a little from night to
// night the flag came and went and moved the step's change point to and
// fro, further than Match pairs: the nightly precision of clean 3 % steps
// fell from 0.980 to 0.943 (150 series). And every bad newest night is
// reported, provisionally, as the end-of-series rule reports any night that
// departs: about one provisional change point per bad night (the "reported"
// columns below), withdrawn the next night. A caller that mails only
// confirmed change points mails none of them.
//
// # Nightly runs, moving indices and de-duplication
//
// A pass without memory withdraws and re-reports a step that was first seen
// on a lucky night, as the next nights regress towards the true step.
// Update takes the previous pass's change points and keeps each while its
// p-value stays within KeepFactor (10) times its level and its magnitude
// within keepMagnitudeFactor of the minimum: hysteresis. Detect is Update
// with no previous change points, what a fresh analysis of the history
// finds; the two differ only in change points at the margin.
//
// A change point's index may move when later nights arrive: refinement
// moves it at most DefaultMatchDistance (3) nights per pass, towards the
// least-squares split between its neighbours, which settles as the
// segments grow; a candidate a night or two away that fits better replaces
// it. It looks for that split half a window either side, not only as far
// as it may move: near a step the least-squares criterion is flat over the
// nights whose noise put them between the levels, with a best at each end
// of them, and a change point first reported at one end stayed there for
// the rest of the year when the other became the better (two of the 200
// 3 % steps of the contaminated table below when it had 100 series, with
// bad nights and without: held 4 and 5 nights early, where a fresh pass
// over the year placed them at the step). While the two stay close it may move to and fro between
// them, within what Match pairs. In the simulations below the index moved at most 3 nights between
// its first report and the end of the year (99th percentile), and a
// fresh pass placed it at most 3 nights from the true step. A change point
// disappears when the data stop supporting it (a provisional one not
// confirmed, or one merged into a neighbour). Match pairs the change points
// of two passes over the grown series by direction and an index distance of
// at most DefaultMatchDistance, and says which are new and which are
// withdrawn, so the caller reports each change once and updates, not
// duplicates, the ones that moved.
//
// # Calibration
//
// The defaults were chosen by simulation, not by guess (internal/sim;
// go run ./stats/changepoint/internal/cpsim -table null|steps|sweep prints these
// tables; sim_test.go asserts bounds on them). Series are 365 nights of
// Gaussian noise around a level; the nightly run replays the pass every
// night on the series so far, with Update and Match, and counts every
// change point it ever reported, withdrawn ones included. Noise per night:
// icount 0.0003 (0.03 %, measured); TCG wall time 0.02 and 0.05
// (docs/verdicts.md's TCG section measures 2–4 % within a boot and 10–15 % between
// boots of one image; a night is the median of a few boots).
//
// Searching every split of every window every night inflates false alarms
// far beyond the nominal level. With Otava's P = 0.001 the nightly replay
// reported 0.40 false change points per series-year at 2 % noise (300
// series, magnitude floor off so that the p-values alone decide; at TCG
// noise a 1 % floor changes little): one a year for every two or three
// benchmarks, where a fresh pass over the finished year keeps 0.06. The
// sweep (300 series per row; one option changed from the defaults per row;
// "fresh" is Detect over the whole year, "nightly" every change point the
// nightly run ever reported):
//
//	options                      null: fresh  null: nightly  3 %: recall  3 %: precision  3 %: delay median, p90
//	P=1e-3  EndP=1e-4            0.063        0.397          0.997        0.849           2, 3
//	P=3e-4  EndP=3e-5            0.003        0.053          0.997        0.960           2, 3
//	P=1e-4  EndP=1e-5 (default)  0.000        0.010          0.997        0.984           2, 4
//	P=3e-5  EndP=3e-6            0.000        0.003          0.997        0.992           3, 4
//	Window=20                    0.007        0.020          0.997        0.992           2, 4
//	Window=50                    0.000        0.020          0.997        0.984           2, 4
//	MinSegment=2                 0.000        0.010          0.997        0.985           2, 4
//	MinSegment=5                 0.000        0.007          0.998        0.968           3, 4
//	EndP=1e-4                    0.000        0.013          0.997        0.984           2, 4
//	EndP=1e-6                    0.000        0.010          0.997        0.984           2, 4
//
// P = 1e-4 (EndP = 1e-5) is the smallest level whose nightly false alarms
// fall to about one per hundred series-years at TCG noise while a 3 % step
// under 1 % noise is still reported two nights after it in the median;
// three times stricter buys little and costs a night. The window and the
// minimum segment matter little; 30 nights (Otava's split default) and 3
// nights (an excursion of two nights is an outlier) were kept.
//
// At the defaults, 1000 series of 365 nights per row, false change points
// per series-year: in a fresh pass over the year, reported by the nightly
// run (withdrawn ones included), and still held by it after the last
// night:
//
//	noise per night       magnitude floor  fresh pass  nightly: reported  nightly: held  series with a nightly false alarm
//	icount 0.0003         1 % (default)    0.000       0.000              0.000          0.0 %
//	icount 0.0003         none             0.000       0.017              0.007          1.1 %
//	TCG 0.02              1 %              0.000       0.012              0.002          1.0 %
//	TCG 0.02              none             0.000       0.012              0.002          1.0 %
//	TCG 0.05              1 %              0.000       0.012              0.000          1.2 %
//	TCG 0.05              none             0.000       0.012              0.000          1.2 %
//	TCG 0.05, floor 0.02  1 %              0.005       0.088              0.018          6.6 %
//	TCG 0.05, no floor    1 %              0.005       0.099              0.018          7.6 %
//
// Under icount the minimum magnitude decides: a 1 % change is 33 noise
// standard deviations, and no null series came near it. Under TCG noise
// the p-values decide (the rows with and without a magnitude floor agree):
// the nightly run reports about one false change point per 80
// series-years, and most are withdrawn again by the end of the year. A
// floor 2.5 times too low, or none, costs about eight times more.
//
// Steps of 3 % and 10 % under 1 % noise, two per series (one between nights
// 91 and 150, one between 219 and 291, each up or down), 1000 series per
// row; a change point within 3 nights of a step and in its direction finds
// it; precision counts duplicates of a step as false; delay is the number
// of nights after the step's first night until the nightly run reported it
// (0: that night):
//
//	step   floor  recall fresh  precision fresh  recall nightly  precision nightly  delay median  p90  max
//	3 %    0.01   0.999         0.999            0.999           0.987              2             4    27
//	3 %    none   0.999         0.996            1.000           0.918              2             4    27
//	10 %   0.01   1.000         1.000            1.000           0.991              0             0    1
//	10 %   none   1.000         0.997            1.000           0.924              0             0    1
//
// The fresh pass placed every step it found at most 3 nights from the true
// night, and the nightly run moved a change point at most 3 nights (99th
// percentile) between its first report and the end of the year. Without a
// floor the nightly run reports about 8 % more change points than there
// are steps, mostly false ones that later nights withdraw: give the floor.
//
// The same with bad nights (internal/sim.contaminate: a share of the
// nights, one or two at a time with a good night between, each off by
// 10–50 % in the episode's direction), before excursions (the raw values,
// ExcursionSigmas +Inf) and with them, counting what a caller that mails
// only confirmed change points mails: change points the nightly run held
// confirmed on some night ("confirmed"), beside every one it reported
// ("reported", provisional ones included). go run
// ./stats/changepoint/internal/cpsim -table outliers [-excursion-sigmas +Inf]
// (-part and -step-size split it between processes); 1000 series of 365
// nights per row, seed 1 (one false change point is 0.001 per series-year,
// one missed step 0.0005 of recall); "series with one" is the share of
// series with a confirmed false alarm, "flagged" the bad nights found as
// excursions and the other nights found, per series-year; delays as
// median, p90 and max. False change points per series-year:
//
//	noise per night  bad  raw: reported  confirmed  series with one  excursions: reported  confirmed  series with one  bad nights flagged  others flagged
//	icount 0.0003    0%   0.000          0.000      0.0%             0.000                 0.000      0.0%             —                   0.000
//	icount 0.0003    1%   2.418          1.333      66.0%            2.366                 0.000      0.0%             99.5%               0.000
//	icount 0.0003    5%   5.609          3.214      98.0%            11.454                0.001      0.1%             99.7%               0.000
//	TCG 2 % 0.02     0%   0.012          0.012      1.0%             0.012                 0.012      1.0%             —                   0.014
//	TCG 2 % 0.02     1%   2.229          1.234      65.1%            2.283                 0.040      3.4%             97.8%               0.012
//	TCG 2 % 0.02     5%   5.088          2.963      97.3%            10.895                0.092      8.1%             97.6%               0.007
//	TCG 5 % 0.05     0%   0.012          0.012      1.2%             0.012                 0.012      1.2%             —                   0.016
//	TCG 5 % 0.05     1%   1.329          0.792      48.4%            1.348                 0.137      12.0%            67.7%               0.013
//	TCG 5 % 0.05     5%   2.965          1.796      82.9%            6.103                 0.623      42.9%            63.2%               0.008
//
// Under icount every bad night is far out (a 10 % night is 333σ) and is
// flagged: one confirmed false change point in 1000 series-years with 5 %
// bad nights and none with 1 %, where the raw values confirmed more than
// one per series-year. At TCG's 2 % noise with 1 % bad nights, 0.040
// instead of 1.234; at 5 % noise a third of the bad nights lie within 4σ
// and stay in the statistics (above). The clean rows are the same with and
// without excursions, but for the ordinary nights flagged, and match the
// null table above. "reported" counts each bad newest night's provisional
// change point, withdrawn the next night.
//
// Steps of 3 % and 10 % under 1 % noise, two per series, as above;
// recall, precision and delays of the change points the nightly run
// confirmed; delay is to the first report, "to confirmation" to the night
// it was first held confirmed:
//
//	step  bad  raw: recall  precision  delay      to confirmation  excursions: recall  precision  delay   to confirmation
//	3%    0%   1.000        0.990      2,4,8      2,4              1.000               0.989      2,4,8   2,4
//	3%    1%   0.906        0.526      4,30,136   4,30             0.999               0.982      2,4,8   2,4
//	3%    5%   0.403        0.181      26,88,258  27,88            0.999               0.942      2,4,20  2,4
//	10%   0%   1.000        0.991      0,0,1      2,2              1.000               0.991      0,0,1   2,2
//	10%   1%   0.988        0.615      1,6,125    2,6              1.000               0.984      0,0,4   2,2
//	10%   5%   0.911        0.335      7,14,79    7,14             0.999               0.955      0,0,10  2,2
//
// On clean series the rows agree with the steps table above but for
// refine's change (above): 3 % steps are found at recall 1.000 with a
// longest delay of 8 nights (was 0.999 and 27), and the ordinary nights
// flagged beside them (0.017 per series-year) cost a little precision
// (0.989; raw values 0.990).
//
// With 1 % bad nights the steps are confirmed as soon as on clean series
// (3 %: median 2, p90 4 nights, as clean; the raw values took 4 and 30),
// and 1998 of 2000 3 % steps were (0.999; clean, 2000). Of the 3 % steps
// the previous pass missed at 100 series (197 of 200), two were confirmed
// 4 and 5 nights before the step and held there (refine, above, now moves
// them); the third is still missed: a pair of bad nights two nights before
// an upward step, the two nights before the pair 2σ up by chance, and the
// least-squares split over the year is before those two nights, 4 nights
// before the step (2, not counting the pair): the data favour the early
// placement, and a rule that followed them would make the same miss.
//
// A full pass over 100 benchmarks of 1000 nights each takes about 0.1 s on
// one core (BenchmarkDetectFleet: 96 to 185 ms per pass on a shared 2-core
// AMD EPYC under load), so a nightly run can re-analyse a whole fleet's
// history every night.
package changepoint

// Package bisect finds the commit, or the prebuilt kernel, that moved a
// benchmark: a search over candidates whose every step is a measurement
// judged by package compare's verdicts.
//
// The pieces, from the bottom up:
//
//   - Bench measures kernels (through a Measurer: VMMeasurer starts each
//     measurement with measure.Setup.Start) and keeps their boots in a Store
//     keyed by the image's SHA-256 and the measurement parameters, so a
//     kernel is booted once however often it comes up, and a commit whose
//     image does not change costs no boot. Its first look at a kernel takes
//     compare.Start's boots (both verdicts reachable), more while UNKNOWN, up
//     to MaxBoots.
//   - Judge turns the boots of two kernels into SAME, DIFFERENT or UNKNOWN
//     per benchmark (compare's statistics, calibrated for the host), and
//     Classify turns a candidate's comparisons with both endpoints into good,
//     bad or skip on the rows where the endpoints differ.
//   - Bisection holds what a whole bisection shares: the endpoints measured
//     first (refused unless DIFFERENT in the expected direction), each step
//     classified, the culprit re-checked against its parent with extra
//     interleaved boots, the Result. State, in a directory keyed by the
//     bisection's identity, lets an interrupted bisection resume.
//   - gitBisect drives git bisect over a repository (each commit built with a
//     build.Builder in a worktree of its own), imagesBisect searches a list of
//     prebuilt kernels (searchList), and runStep is one step of
//     `git bisect run lpmbisect bisect-run`, answering with git's exit codes.
//
// The package returns data: a Result and its Report (view.Bisection); the
// command renders and writes the report files.
package bisect

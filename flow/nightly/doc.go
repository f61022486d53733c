// Package nightly follows kernel series night after night: it measures
// each night's tip beside a fixed reference kernel, keeps everything in a
// history database (package history), finds change points over the history
// (package changepoint), bisects new ones, and says what is new.
//
// # One night of one series
//
//  1. The tip: for a git series, the branch's tip after fetching its
//     remote (a rebased branch, whose last tip is no longer an ancestor, is
//     said in the night's note); for an images series, the newest kernel CI
//     dropped (list order in a list file, modification time in a
//     directory). A tip measured before (same commit, or same image
//     SHA-256) costs no boot, not even of the reference: the night records
//     "no change".
//  2. A git tip is built in the series' own worktree and build directory
//     under the state directory, kept between nights, so builds are
//     incremental and the user's tree is never touched. When the compiler
//     or the configuration hash differs from the last measured night's, the
//     previous tip is rebuilt with tonight's toolchain and booted too
//     (role rebuilt-previous), so a toolchain change is not blamed on a
//     commit; the night's note shows the configuration difference.
//  3. The reference and the tip boot interleaved, a fixed number of times
//     every night (no adaptive stopping: every night gets the same
//     precision), with the harness controls. Every completed boot is stored
//     as it ends, with its raw results, so a night killed half way and run
//     again boots only what is missing and stores nothing twice.
//  4. The night's own verdicts, with package compare's statistics: the tip
//     against the last measured tip (the prompt alert: a step is reported
//     the first night it shows), against the reference, and the reference
//     against the last night's reference (a step there means the host or the
//     harness changed; a kernel step on the same night is still reported).
//  5. The change-point pass over the whole history of each benchmark, on
//     two lines: the kernel line (the tip relative to the reference, which
//     divides out the host) and the host line (the reference alone). A
//     change point already reported is not reported again; one that later
//     nights move is updated, one they withdraw is marked withdrawn. A
//     night or two far from the nights on both sides of them are
//     excursions (package changepoint): kept out of the pass's statistics,
//     stored as such with their boots, and alerted the night they are
//     found, under icount as a kernel that was different that night.
//     view.LoadHistory hands them to the history reports with the change points.
//  6. A new change point on the kernel line gets a mail body (and the
//     configured notify command), and is bisected automatically between the
//     nights around it, widened by one night on each side; a change smaller
//     than what this host resolves for that benchmark is recorded as not
//     bisected instead. The mail names the excursions inside its range
//     (a bad night there may hide which kernel moved) and the night's new
//     ones.
//
// # Faults
//
// A night whose build fails, whose kernel does not boot or whose
// measurement is inconclusive is recorded with its reason, and the next
// series (and the next night) goes on. One nightly runs at a time per
// history database: a second waits for the lock, up to a limit, or refuses
// with who holds it. Old run directories and kept kernels are pruned to the
// newest nights of each series (KeepRuns); the history keeps every result.
package nightly

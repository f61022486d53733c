// Package view holds what lpmbisect's reports show, as data: the run
// behind a comparison (Meta, KernelInfo), a finished bisection (Bisection),
// the history of the nightly series (History), a night as the morning
// report tells it (NightSummary), a change-point mail (Mail), and the
// number formats that every report and every log line of the domain
// packages share (FormatDelta, FormatP, FormatPRelation, FormatValue).
//
// The domain packages fill the views and return them; package report
// renders them; only the command (cmd/lpmbisect) imports report, and it
// writes the files. Computing stays apart from rendering, as x/perf keeps
// benchmath apart from its tables.
//
// A view lives here, below both the packages that fill it and the
// renderer, rather than in one of the packages that fill it:
//
//   - the run of a comparison is described by ab (a comparison measured
//     now, or read back from its results file) and by bisect (its re-check
//     of the culprit against its parent): neither should import the other
//     for it;
//   - report would otherwise import the domain packages that fill its
//     inputs (nightly fills the history, the morning report and the mail;
//     bisect the bisection), and through them every stage of the flow
//     (building, booting, the history database), for a handful of structs;
//   - a view carries only types of the data packages (compare, history,
//     insight), so this package imports nothing that builds, boots or
//     stores.
//
// A view says what to show, never how: the words a domain package decided
// (a bisection's culprit line is bisect's) are data, and the layout, the
// formats and the wording of everything else are report's. The number
// formats are the exception, kept here because bisect's step log prints
// the same numbers as the reports and must print them alike; so is what
// an excursion means (ExcursionMeaning), which nightly's alert and the
// history reports say alike.
package view

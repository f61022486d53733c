package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// stateVersion is the version of the state file format.
const stateVersion = 1

// State is a bisection's record on disk, what makes it resumable:
//
//	<dir>/<kind>-<id>.json  this State: what is bisected, with which
//	                        parameters, every kernel built and every step
//	                        decided; <id> hashes what identifies the
//	                        bisection, so the same command finds it again
//	<dir>/<kind>-<id>.log   one line per step, appended as steps are decided
//	<dir>/<kind>-<id>.report.txt, .report.html  the final report
//	<dir>/measurements/<params>/<sha256>.txt  results per image (Store)
//	<dir>/kernels/<sha256>/…                  the kernels built, kept to boot
//	                                          again (re-check, resume)
//	<dir>/logs/<commit>.log                   logs of builds that failed
//
// A run that finds a state for the same bisection (kind, endpoints, images,
// direction, parameters) goes on from it: a step already decided is not
// built or measured again. A state for another bisection is never
// overwritten.
type State struct {
	Version int  `json:"version"`
	Kind    Kind `json:"kind"`

	// Identity: a state is resumed only by the same bisection.
	Repo    string   `json:"repo,omitempty"`
	Good    string   `json:"good,omitempty"` // commit, or kernel input
	Bad     string   `json:"bad,omitempty"`
	Images  []string `json:"images,omitempty"`
	Reverse bool     `json:"reverse,omitempty"`
	Params  string   `json:"params"` // measurement parameters (measure.Setup.ParamsKey)
	Judge   string   `json:"judge"`  // statistics: alpha, minimum effect, boots

	// Started is set while a git bisect started by lpmbisect is in
	// progress in Repo.
	Started bool `json:"started,omitempty"`
	// Kernels are the kernels built or resolved so far, by commit (git) or
	// by input (images).
	Kernels map[string]*kbuild.Built `json:"kernels,omitempty"`
	// Measured lists the images booted by this bisection, by SHA-256.
	Measured []string `json:"measured,omitempty"`
	Effect   *Effect  `json:"effect,omitempty"`
	// RecheckTarget is the boots per kernel the re-check measures to, fixed
	// when it starts, so a resumed re-check does not add boots again.
	RecheckTarget int     `json:"recheck_target,omitempty"`
	Steps         []Step  `json:"steps,omitempty"`
	Result        *Result `json:"result,omitempty"`

	dir  string
	file string
}

// Kind is what a bisection searches.
type Kind string

// Kinds of bisection.
const (
	KindGit    Kind = "git"        // lpmbisect bisect --repo: commits of a repository
	KindImages Kind = "images"     // lpmbisect bisect --images: a list of prebuilt kernels
	KindRun    Kind = "bisect-run" // steps of git bisect run lpmbisect bisect-run
	// KindSeries is not a bisection but a patch series measured patch by
	// patch (package series), which keeps its kernels and measurements
	// the same way.
	KindSeries Kind = "series"
)

// Step is one decided bisection step.
type Step struct {
	N       int       `json:"n"`
	Time    time.Time `json:"time"`
	Commit  string    `json:"commit,omitempty"`
	Subject string    `json:"subject,omitempty"`
	// Index is the position in the image list (images mode), from 0.
	Index   int     `json:"index"`
	Kernel  string  `json:"kernel,omitempty"`
	Image   string  `json:"image,omitempty"`
	Verdict Verdict `json:"verdict"`
	Seconds float64 `json:"seconds"`
}

// Result is how a bisection ended.
type Result struct {
	// FirstBad is the culprit: a commit, or an image input.
	FirstBad string `json:"first_bad,omitempty"`
	Subject  string `json:"subject,omitempty"`
	Index    int    `json:"index,omitempty"` // images mode
	Parent   string `json:"parent,omitempty"`
	// Range lists the candidates when skipped steps left more than one.
	Range      []string `json:"range,omitempty"`
	Recheck    *Recheck `json:"recheck,omitempty"`
	Confidence float64  `json:"confidence"`
	Measured   int      `json:"measured"` // distinct images booted
	Steps      int      `json:"steps"`
}

// Found reports whether the bisection named a culprit that stands: a single
// commit or kernel, confirmed by the re-check when there was one. A culprit
// whose image is identical to its parent's is suspect, not found.
func (r *Result) Found() bool {
	if r.FirstBad == "" {
		return false
	}
	return r.Recheck == nil || (!r.Recheck.SameImage && r.Recheck.Confirmed)
}

// identity is what must match for a state to be resumed.
func (s *State) identity() string {
	id, _ := json.Marshal(struct {
		Kind            Kind
		Repo, Good, Bad string
		Images          []string
		Reverse         bool
		Params, Judge   string
	}{s.Kind, s.Repo, s.Good, s.Bad, s.Images, s.Reverse, s.Params, s.Judge})
	return string(id)
}

// ErrOtherBisection is wrapped when the state directory holds another
// bisection's state.
var ErrOtherBisection = errors.New("the state directory holds another bisection")

// OpenState opens the state of the bisection described by want in dir: the
// saved state when it is the same bisection, else a new one. It refuses a
// state of another bisection.
func OpenState(dir string, want State) (*State, error) {
	want.Version = stateVersion
	want.dir = dir
	sum := sha256.Sum256([]byte(want.identity()))
	want.file = filepath.Join(dir, string(want.Kind)+"-"+words.ShortHash(hex.EncodeToString(sum[:]))+".json")
	data, err := os.ReadFile(want.file)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("bisect state: %w (choose a writable state directory)", err)
		}
		want.Kernels = map[string]*kbuild.Built{}
		return &want, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bisect state: %w", err)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("bisect state %s: %w (delete it to start over)", want.file, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("bisect state %s has version %d, this lpmbisect writes %d (delete it to start over)", want.file, s.Version, stateVersion)
	}
	if s.identity() != want.identity() {
		return nil, fmt.Errorf("%w: %s is for %s (use another state directory, or delete it to start over)", ErrOtherBisection, want.file, s.describe())
	}
	s.dir, s.file = dir, want.file
	if s.Kernels == nil {
		s.Kernels = map[string]*kbuild.Built{}
	}
	return &s, nil
}

func (s *State) describe() string {
	var what string
	switch s.Kind {
	case KindImages:
		what = fmt.Sprintf("a bisection over %d images", len(s.Images))
	default:
		what = fmt.Sprintf("a %s bisection %s..%s", s.Kind, words.ShortHash(s.Good), words.ShortHash(s.Bad))
	}
	return fmt.Sprintf("%s with params %s, %s, reverse=%v", what, s.Params, s.Judge, s.Reverse)
}

// Dir is the state directory.
func (s *State) Dir() string { return s.dir }

// Path is the state file.
func (s *State) Path() string { return s.file }

// LogPath is the step log.
func (s *State) LogPath() string { return strings.TrimSuffix(s.file, ".json") + ".log" }

// Save writes the state atomically.
func (s *State) Save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("bisect state: %w", err)
	}
	if err := cachefile.WriteBytes(s.file, append(data, '\n')); err != nil {
		return fmt.Errorf("bisect state: %w", err)
	}
	return nil
}

// StepFor returns the decided step for a commit (git) or an index (images).
func (s *State) StepFor(commit string, index int) (Step, bool) {
	for _, st := range s.Steps {
		if (commit != "" && st.Commit == commit) || (commit == "" && st.Commit == "" && st.Index == index) {
			return st, true
		}
	}
	return Step{}, false
}

// AddStep records a decided step, appends it to the step log, and saves.
func (s *State) AddStep(st Step, also *log.Logger) error {
	st.N = len(s.Steps) + 1
	s.Steps = append(s.Steps, st)
	line := FormatStep(st)
	if also != nil {
		also.Print(line)
	}
	if err := s.AppendLog(st.Time, line); err != nil {
		return err
	}
	return s.Save()
}

// AppendLog appends a line to the step log.
func (s *State) AppendLog(t time.Time, line string) error {
	f, err := os.OpenFile(s.LogPath(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("bisect log: %w", err)
	}
	fmt.Fprintf(f, "%s %s\n", t.UTC().Format(time.RFC3339), line)
	return f.Close()
}

// NoteMeasured adds images to the set booted by this bisection.
func (s *State) NoteMeasured(shas []string) {
	for _, sha := range shas {
		if !slices.Contains(s.Measured, sha) {
			s.Measured = append(s.Measured, sha)
		}
	}
	slices.Sort(s.Measured)
}

// FormatStep renders a step as one log line: what was tested, the image, the
// boots, the verdict and the evidence, e.g.
//
//	step 3: commit 1a4a0cb7985f image 5e0c7b2d91aa boots 4: bad: LPMTrie/…: vs good DIFFERENT (-21.30%, p=0.0286), vs bad SAME (+0.01%, p=0.886) "bpf/lpm_trie: inline …"
func FormatStep(st Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d: ", st.N)
	if st.Commit != "" {
		fmt.Fprintf(&b, "commit %s", words.ShortHash(st.Commit))
	} else {
		fmt.Fprintf(&b, "image #%d %s", st.Index+1, filepath.Base(st.Kernel))
	}
	if st.Image != "" {
		fmt.Fprintf(&b, " image %s", words.ShortHash(st.Image))
	}
	fmt.Fprintf(&b, " boots %d: %s", st.Verdict.Boots, st.Verdict.Class)
	if st.Verdict.Reason != "" {
		fmt.Fprintf(&b, ": %s", st.Verdict.Reason)
	}
	if st.Subject != "" {
		fmt.Fprintf(&b, " %q", st.Subject)
	}
	return b.String()
}

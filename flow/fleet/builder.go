package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/git"
)

// Builder is a kbuild.Builder whose builds are build jobs on a fleet's
// build queue: it asks for the commit checked out in the source tree it is
// given, by the names the build workers know (Tree, Config), and returns
// the image a worker built. The job carries no command: the workers'
// configuration says how a tree is built.
type Builder struct {
	Client *Client
	// Queue is the build queue (default buildQueue).
	Queue string
	// Tree and Config name the tree and the build configuration on the
	// workers (Worker.Trees, Worker.Builds).
	Tree, Config string
	// StuckAfter is how long one build may take before it is taken for
	// stuck (default defaultBuildStuckAfter).
	StuckAfter time.Duration
	// PollInterval is the longest wait between looks at the job (default
	// 2 s).
	PollInterval time.Duration
}

// Build implements kbuild.Builder: it builds src's HEAD on the queue. The
// image is fetched under buildDir/fleet-images and the end of the
// worker's build log is written to kbuild.LogPath(buildDir), where a
// local build leaves its log, so a failed build (an error wrapping
// kbuild.ErrBuildFailed) skips the commit with its log kept, as a local
// failed build does. When ctx ends, the job is canceled unless another
// client shares it.
func (b *Builder) Build(ctx context.Context, src, buildDir string) (*kbuild.BuildOutput, error) {
	commit, err := (&git.Repo{Dir: src}).Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet build of %s: %w", src, err)
	}
	res, err := b.Client.Build(ctx, BuildRequest{Queue: b.Queue, Tree: b.Tree, Commit: commit, Config: b.Config,
		StuckAfter: b.StuckAfter, Dir: filepath.Join(buildDir, "fleet-images"), PollInterval: b.PollInterval})
	logPath := kbuild.LogPath(buildDir)
	if res != nil {
		if werr := writeBuildLog(logPath, res, b.Tree, commit); werr != nil && err == nil {
			return nil, werr
		}
	}
	if errors.Is(err, kbuild.ErrBuildFailed) {
		return nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	if err != nil {
		return nil, err
	}
	return &kbuild.BuildOutput{Kernel: res.Image, Log: logPath, Duration: res.Duration}, nil
}

// writeBuildLog writes what a worker's build said: which job and worker,
// and the end of its log.
func writeBuildLog(path string, res *BuildResult, tree, commit string) error {
	head := fmt.Sprintf("# lpmbisect: build job %d of tree %s at %s on worker %s (the last %d KiB of its log at most)\n",
		res.JobID, tree, commit, res.Worker, maxBuildLog>>10)
	if err := cachefile.WriteBytes(path, append([]byte(head), res.LogTail...)); err != nil {
		return fmt.Errorf("build log: %w", err)
	}
	return nil
}

// interface check: the bisection's builds may run on a fleet.
var _ kbuild.Builder = (*Builder)(nil)

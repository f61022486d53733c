package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// Blob store bounds.
const (
	// blobChunk is the size of the pieces a blob is stored in: a bytea
	// value is read whole, and 1 MiB pieces keep an upload or a fetch at
	// a few MiB of memory whatever the blob's size.
	blobChunk = 1 << 20
	// maxBlobSize bounds a blob: kernel images are around 10 MiB and
	// initramfs archives a few, debug kernels a few hundred.
	maxBlobSize = 1 << 30
)

// Errors of blob transfers, wrapped with the blob's hash.
var (
	// ErrBlobNotFound: no complete blob with this hash in the database.
	ErrBlobNotFound = errors.New("blob not in the fleet database")
	// ErrBlobCorrupt: what was fetched does not hash to the name it was
	// fetched by.
	ErrBlobCorrupt = errors.New("blob content does not match its SHA-256")
)

// putBlob stores the file at path under its SHA-256, which it returns. A
// blob already stored is not sent again. The blob row and its chunks are
// written in one transaction, so a blob is either complete or absent; the
// file is hashed again as it is sent, and a file that changed meanwhile is
// not stored.
func (db *database) putBlob(ctx context.Context, path string) (string, bool, error) {
	sum, err := cachefile.SHA256(path)
	if err != nil {
		return "", false, err
	}
	var present bool
	if err := db.pool.QueryRow(ctx, "UPDATE lpmbisect_fleet_blobs SET used_at = now() WHERE sha256 = $1 RETURNING true", sum).Scan(&present); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", false, db.errorf(err, "look up blob %s", words.ShortHash(sum))
	}
	if present {
		return sum, false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false, fmt.Errorf("upload %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("upload %s: %w", path, err)
	}
	if st.Size() > maxBlobSize {
		return "", false, fmt.Errorf("upload %s: %d bytes, more than the %d a blob may hold", path, st.Size(), maxBlobSize)
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return "", false, db.errorf(err, "upload blob %s", words.ShortHash(sum))
	}
	defer tx.Rollback(ctx)
	chunks := int((st.Size() + blobChunk - 1) / blobChunk)
	tag, err := tx.Exec(ctx, "INSERT INTO lpmbisect_fleet_blobs (sha256, size, chunks) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING", sum, st.Size(), chunks)
	if err != nil {
		return "", false, db.errorf(err, "upload blob %s", words.ShortHash(sum))
	}
	if tag.RowsAffected() == 0 {
		return sum, false, nil // another client stored it meanwhile
	}
	h := sha256.New()
	buf := make([]byte, blobChunk)
	var size int64
	for n := 0; ; n++ {
		k, err := io.ReadFull(f, buf)
		if k > 0 {
			h.Write(buf[:k])
			size += int64(k)
			if _, err := tx.Exec(ctx, "INSERT INTO lpmbisect_fleet_blob_chunks (sha256, n, data) VALUES ($1, $2, $3)", sum, n, buf[:k]); err != nil {
				return "", false, db.errorf(err, "upload blob %s chunk %d", words.ShortHash(sum), n)
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return "", false, fmt.Errorf("upload %s: %w", path, err)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum || size != st.Size() {
		return "", false, fmt.Errorf("upload %s: the file changed while it was sent (try again when nothing writes it)", path)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", false, db.errorf(err, "upload blob %s", words.ShortHash(sum))
	}
	return sum, true, nil
}

// BlobError is a blob that could not be fetched as named.
type BlobError struct {
	SHA256 string
	Err    error
}

func (e *BlobError) Error() string { return "blob " + e.SHA256 + ": " + e.Err.Error() }
func (e *BlobError) Unwrap() error { return e.Err }

// fetchBlob returns the path of the blob sum in dir (<dir>/<sum>),
// fetching it when it is not there. Every byte fetched is hashed, and the
// file appears (by rename) only when the hash is the one asked for; a
// cached file is hashed again before it is used, and replaced when it no
// longer matches.
func (db *database) fetchBlob(ctx context.Context, sum, dir string) (string, error) {
	if !sha256Hex.MatchString(sum) {
		return "", &BlobError{SHA256: clip(sum), Err: fmt.Errorf("%w: not a SHA-256", ErrBadArgs)}
	}
	path := filepath.Join(dir, sum)
	if got, err := cachefile.SHA256(path); err == nil && got == sum {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("blob cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, sum+".*.partial")
	if err != nil {
		return "", fmt.Errorf("blob cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	err = db.retry(ctx, nil, "fetch blob", func(ctx context.Context) error {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := tmp.Truncate(0); err != nil {
			return err
		}
		return db.readBlob(ctx, sum, tmp)
	})
	if err != nil {
		var be *BlobError
		if errors.As(err, &be) {
			return "", err
		}
		return "", db.errorf(err, "fetch blob %s", words.ShortHash(sum))
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("blob cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("blob cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("blob cache: %w", err)
	}
	return path, nil
}

// readBlob copies the blob sum to w, checking its chunks, size and hash.
func (db *database) readBlob(ctx context.Context, sum string, w io.Writer) error {
	var size int64
	var chunks int
	err := db.pool.QueryRow(ctx, "UPDATE lpmbisect_fleet_blobs SET used_at = now() WHERE sha256 = $1 RETURNING size, chunks", sum).Scan(&size, &chunks)
	if errors.Is(err, pgx.ErrNoRows) {
		return &BlobError{SHA256: sum, Err: ErrBlobNotFound}
	}
	if err != nil {
		return err
	}
	rows, err := db.pool.Query(ctx, "SELECT n, data FROM lpmbisect_fleet_blob_chunks WHERE sha256 = $1 ORDER BY n", sum)
	if err != nil {
		return err
	}
	defer rows.Close()
	check := newBlobCheck(sum, size, chunks)
	for rows.Next() {
		var n int
		var data []byte
		if err := rows.Scan(&n, &data); err != nil {
			return err
		}
		if err := check.chunk(n, data); err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("blob cache: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return check.end()
}

// blobCheck checks a blob's chunks, as they come from the database, against
// its row (size, chunks) and its name (sum): a client that wrote the
// database may have lied in either. Nothing is kept but the hash.
type blobCheck struct {
	sum    string
	size   int64
	chunks int
	h      hash.Hash
	got    int64
	next   int
}

func newBlobCheck(sum string, size int64, chunks int) *blobCheck {
	return &blobCheck{sum: sum, size: size, chunks: chunks, h: sha256.New()}
}

// chunk takes chunk n: the next in order, at most blobChunk bytes, within
// the size the row says, which is at most maxBlobSize.
func (c *blobCheck) chunk(n int, data []byte) error {
	if c.size > maxBlobSize {
		return &BlobError{SHA256: c.sum, Err: fmt.Errorf("%w: the blob row says %d bytes, more than the %d a blob may hold", ErrBlobCorrupt, c.size, maxBlobSize)}
	}
	if n != c.next || len(data) > blobChunk || c.got+int64(len(data)) > c.size {
		return &BlobError{SHA256: c.sum, Err: fmt.Errorf("%w: chunk %d is out of order or too large", ErrBlobCorrupt, n)}
	}
	c.next++
	c.got += int64(len(data))
	c.h.Write(data)
	return nil
}

// end checks that the chunks were all the row says and hash to the name.
func (c *blobCheck) end() error {
	if c.next != c.chunks || c.got != c.size {
		return &BlobError{SHA256: c.sum, Err: fmt.Errorf("%w: %d bytes in %d chunks, the blob row says %d in %d", ErrBlobCorrupt, c.got, c.next, c.size, c.chunks)}
	}
	if got := hex.EncodeToString(c.h.Sum(nil)); got != c.sum {
		return &BlobError{SHA256: c.sum, Err: fmt.Errorf("%w: the content hashes to %s", ErrBlobCorrupt, got)}
	}
	return nil
}

// PruneBlobs deletes the blobs that nobody stored or fetched for
// olderThan, and returns how many it deleted and their bytes. A blob that a
// job not yet finished names is kept, whatever its age.
func (c *Client) PruneBlobs(ctx context.Context, olderThan time.Duration) (int, int64, error) {
	var n int
	var size int64
	err := c.db.pool.QueryRow(ctx, `
WITH gone AS (
	DELETE FROM lpmbisect_fleet_blobs b
	WHERE b.used_at < now() - $1 * interval '1 millisecond'
	AND NOT EXISTS (SELECT 1 FROM river_job j WHERE j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled')
		AND strpos(j.args::text, b.sha256) > 0)
	RETURNING size
)
SELECT count(*), COALESCE(sum(size), 0) FROM gone`, olderThan.Milliseconds()).Scan(&n, &size)
	if err != nil {
		return 0, 0, c.db.errorf(err, "prune blobs")
	}
	return n, size, nil
}

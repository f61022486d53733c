package fleet

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"
)

func TestBlobs(t *testing.T) {
	ctx := context.Background()
	url := migrated(t)
	c, err := connect(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// 2.5 chunks of random bytes.
	data := make([]byte, 2*blobChunk+blobChunk/2)
	rand.Read(data)
	src := filepath.Join(t.TempDir(), "bzImage")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	sum, err := c.PutBlob(ctx, src)
	if err != nil {
		t.Fatalf("PutBlob = %v", err)
	}
	if sum != hex.EncodeToString(want[:]) {
		t.Fatalf("PutBlob = %s; want %x", sum, want)
	}
	var chunks int
	c.db.pool.QueryRow(ctx, "SELECT count(*) FROM lpmbisect_fleet_blob_chunks WHERE sha256 = $1", sum).Scan(&chunks)
	if chunks != 3 {
		t.Errorf("chunks of a %d-byte blob = %d; want 3", len(data), chunks)
	}
	// Stored once: another client's upload of the same content sends nothing.
	if _, sent, err := c.db.putBlob(ctx, src); err != nil || sent {
		t.Errorf("putBlob(stored content) = sent %v, %v; want not sent", sent, err)
	}

	dir := t.TempDir()
	path, err := c.FetchBlob(ctx, sum, dir)
	if err != nil {
		t.Fatalf("FetchBlob = %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatalf("FetchBlob(%s) returned %d bytes that differ from the %d stored", sum[:12], len(got), len(data))
	}
	// A cached file that no longer matches is fetched again.
	os.WriteFile(path, []byte("rotten"), 0o644)
	if path, err = c.FetchBlob(ctx, sum, dir); err != nil {
		t.Fatalf("FetchBlob(rotten cache) = %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatalf("FetchBlob(rotten cache) kept the rotten file")
	}

	// A chunk changed in the database: the fetch fails and leaves nothing.
	if _, err := c.db.pool.Exec(ctx, "UPDATE lpmbisect_fleet_blob_chunks SET data = set_byte(data, 7, get_byte(data, 7) # 1) WHERE sha256 = $1 AND n = 1", sum); err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	if _, err := c.FetchBlob(ctx, sum, fresh); !errors.Is(err, ErrBlobCorrupt) {
		t.Errorf("FetchBlob(corrupt) = %v; want ErrBlobCorrupt", err)
	}
	if left, _ := os.ReadDir(fresh); len(left) != 0 {
		t.Errorf("FetchBlob(corrupt) left %d files in the cache", len(left))
	}
	if _, err := c.FetchBlob(ctx, sumA, fresh); !errors.Is(err, ErrBlobNotFound) {
		t.Errorf("FetchBlob(unknown) = %v; want ErrBlobNotFound", err)
	}
	if _, err := c.FetchBlob(ctx, "../etc/passwd", fresh); !errors.Is(err, ErrBadArgs) {
		t.Errorf("FetchBlob(path) = %v; want ErrBadArgs", err)
	}

	// Pruning keeps what was used lately and what a queued job names.
	other := filepath.Join(t.TempDir(), "initramfs")
	os.WriteFile(other, []byte("another blob"), 0o644)
	kept, err := c.PutBlob(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	queued := filepath.Join(t.TempDir(), "queued")
	os.WriteFile(queued, []byte("a blob a queued job names"), 0o644)
	named, _ := c.PutBlob(ctx, queued)
	a := validBoot()
	a.Boot.Kernel = named
	if _, err := c.river.Insert(ctx, a, &river.InsertOpts{Queue: "icount"}); err != nil {
		t.Fatal(err)
	}
	c.db.pool.Exec(ctx, "UPDATE lpmbisect_fleet_blobs SET used_at = now() - interval '2 days' WHERE sha256 IN ($1, $2)", sum, named)
	n, size, err := c.PruneBlobs(ctx, 24*time.Hour)
	if err != nil || n != 1 || size != int64(len(data)) {
		t.Errorf("PruneBlobs(1 day) = %d blobs, %d bytes, %v; want the one old unnamed blob of %d bytes", n, size, err, len(data))
	}
	var left []string
	rows, _ := c.db.pool.Query(ctx, "SELECT sha256 FROM lpmbisect_fleet_blobs ORDER BY sha256")
	for rows.Next() {
		var s string
		rows.Scan(&s)
		left = append(left, s)
	}
	rows.Close()
	if len(left) != 2 || !slices.Contains(left, kept) || !slices.Contains(left, named) {
		t.Errorf("blobs after pruning = %v; want %s (recent) and %s (named by a queued job)", left, kept[:12], named[:12])
	}
	var chunks2 int
	c.db.pool.QueryRow(ctx, "SELECT count(*) FROM lpmbisect_fleet_blob_chunks WHERE sha256 = $1", sum).Scan(&chunks2)
	if chunks2 != 0 {
		t.Errorf("%d chunks of the pruned blob left", chunks2)
	}
}

package serve

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/lpmbisect/lpmbisect/history"
)

// The pages are cached: rendering a series' trend plots takes tens of
// milliseconds of CPU, and a page changes only when the history does. An
// entry is good while history.DB.Generation says nothing was written since
// it was rendered; one request renders a missing page while the others
// asking for it wait. The generation itself is read at most every
// genFresh, so that a page read often costs no query: a night a nightly
// writes shows up to genFresh late, a triage from this server at once. Forms carry a placeholder in place
// of the session's CSRF token, put in when the page is sent.

// maxCached bounds the entries (pages by path and query); past it the
// cache starts again. maxCachedBody bounds one entry: raw results files
// may be large and are read rarely.
const (
	maxCached     = 256
	maxCachedBody = 4 << 20
	genFresh      = 250 * time.Millisecond
)

type pageCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
	gen     int64
	genRead time.Time // zero: read it again
}

// generation is the history's generation, read at most every genFresh.
func (c *pageCache) generation(ctx context.Context, db *history.DB) (int64, error) {
	c.mu.Lock()
	if !c.genRead.IsZero() && time.Since(c.genRead) < genFresh {
		defer c.mu.Unlock()
		return c.gen, nil
	}
	c.mu.Unlock()
	gen, err := db.Generation(ctx)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.gen, c.genRead = gen, time.Now()
	c.mu.Unlock()
	return gen, nil
}

// forget makes the next request read the generation: this server wrote.
func (c *pageCache) forget() {
	c.mu.Lock()
	c.genRead = time.Time{}
	c.mu.Unlock()
}

type cacheEntry struct {
	gen   int64
	ready chan struct{} // closed when rendered
	resp  *recorded     // nil: not cacheable (an error, too large)
}

// recorded is a rendered answer.
type recorded struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func newRecorded() *recorded { return &recorded{status: http.StatusOK, header: http.Header{}} }

func (r *recorded) Header() http.Header         { return r.header }
func (r *recorded) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorded) WriteHeader(status int)      { r.status = status }

// get returns the answer for key at generation gen, rendering it with
// render when the cache has none (or an older one).
func (c *pageCache) get(key string, gen int64, render func() *recorded) *recorded {
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= maxCached {
		c.entries = map[string]*cacheEntry{}
	}
	e := c.entries[key]
	if e != nil && e.gen == gen {
		c.mu.Unlock()
		<-e.ready
		if e.resp != nil {
			return e.resp
		}
		return render() // not cacheable: everyone renders their own
	}
	e = &cacheEntry{gen: gen, ready: make(chan struct{})}
	c.entries[key] = e
	c.mu.Unlock()
	resp := render()
	if resp.status == http.StatusOK && resp.body.Len() <= maxCachedBody {
		e.resp = resp
	}
	close(e.ready)
	return resp
}

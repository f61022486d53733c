// Package testpg starts a throwaway PostgreSQL server for tests: Debian's
// postgresql package, in a temporary directory, on a free loopback port, with
// a random password, stopped and removed when the test ends.
//
// initdb and postgres refuse to run as root, so when the test runs as root
// the server runs as the "postgres" user that Debian's package creates (the
// process credentials are switched directly, no su or runuser needed); as any
// other user it runs as that user. The server gets the parent-death signal:
// a test binary that is killed takes its server with it.
//
// When PostgreSQL is not installed the test is skipped, or fails under
// LPMBISECT_REQUIRE_VM=1 (set by CI), like the tests that boot real kernels:
// CI must never pass by skipping.
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package testpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// binGlob is where Debian installs the server binaries, one directory per
// major version. $LPMBISECT_PG_BIN names another directory.
const binGlob = "/usr/lib/postgresql/*/bin"

// Start starts a server and returns the URL of a fresh, empty database on it
// (postgres://postgres:PASSWORD@127.0.0.1:PORT/NAME?sslmode=disable). The
// server stops and its directory is removed at the test's cleanup.
func Start(tb testing.TB) string {
	tb.Helper()
	testkernels.SkipShort(tb)
	s, err := newServer()
	if err != nil {
		unavailableOrFatal(tb, err)
	}
	tb.Cleanup(s.stop)
	return s.database(tb)
}

var shared struct {
	sync.Mutex
	inMain bool
	server *server
	err    error
}

// Main runs a package's tests (call it from TestMain) and stops the server
// that Shared started, if any, before it returns the exit code.
func Main(m *testing.M) int {
	shared.Lock()
	shared.inMain = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.server != nil {
		shared.server.stop()
		shared.server = nil
	}
	return code
}

// Shared returns the URL of a fresh, empty database, dropped at the test's
// cleanup, on one server that all tests of the binary share: initdb and a
// server start cost seconds, a database tens of milliseconds. It needs
// TestMain to call Main, which stops the server; without it, it is Start.
func Shared(tb testing.TB) string {
	tb.Helper()
	testkernels.SkipShort(tb)
	shared.Lock()
	if !shared.inMain {
		shared.Unlock()
		return Start(tb)
	}
	if shared.server == nil && shared.err == nil {
		shared.server, shared.err = newServer()
	}
	s, err := shared.server, shared.err
	shared.Unlock()
	if err != nil {
		unavailableOrFatal(tb, err)
	}
	return s.database(tb)
}

// errUnavailable marks the errors that mean "no PostgreSQL here" rather
// than "PostgreSQL is broken".
type errUnavailable struct{ error }

func unavailableOrFatal(tb testing.TB, err error) {
	tb.Helper()
	if u, ok := err.(errUnavailable); ok {
		testkernels.Unavailable(tb, "PostgreSQL: %v", u.error)
	}
	tb.Fatalf("testpg: %v", err)
}

// server is one running postgres.
type server struct {
	base     string // removed by stop
	admin    string // URL of the postgres database
	password string
	host     string // 127.0.0.1:port
	stop     func()
	exited   chan struct{} // closed when postgres has exited
	logPath  string
}

// newServer runs initdb in a new directory and starts postgres on a free
// port.
func newServer() (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, errUnavailable{fmt.Errorf("%v (apt-get install postgresql)", err)}
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, errUnavailable{err}
	}
	// Not t.TempDir: its parents are private to the test's user, and the
	// server's user must reach its directory.
	base, err := os.MkdirTemp("", "lpmbisect-pg-")
	if err != nil {
		return nil, err
	}
	s, err := initAndStart(bin, base, cred)
	if err != nil {
		os.RemoveAll(base)
		return nil, err
	}
	return s, nil
}

func initAndStart(bin, base string, cred *syscall.Credential) (*server, error) {
	if cred != nil {
		if err := os.Chown(base, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown %s: %w", base, err)
		}
	}
	password := randomHex(12)
	pwfile := filepath.Join(base, "pwfile")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if cred != nil {
		os.Chown(pwfile, int(cred.Uid), int(cred.Gid))
	}
	data := filepath.Join(base, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "--pgdata="+data, "--username=postgres",
		"--pwfile="+pwfile, "--auth-host=scram-sha-256", "--auth-local=peer",
		"--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Env = serverEnv(base)
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	os.Remove(pwfile)

	var last error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := startServer(bin, base, data, cred, port)
		if err == nil {
			s.password = password
			s.admin = s.url("postgres")
			if err = s.waitReady(); err == nil {
				return s, nil
			}
			s.stop()
		}
		last = err // most likely the port was taken in between: try another
	}
	return nil, last
}

// startServer runs postgres on port.
func startServer(bin, base, data string, cred *syscall.Credential, port int) (*server, error) {
	logPath := filepath.Join(base, fmt.Sprintf("server-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// Durability is worth nothing in a throwaway server and costs seconds.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=60", "-c", "shared_buffers=16MB")
	cmd.Env = serverEnv(base)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	s := &server{base: base, host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	s.stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGINT) // fast shutdown: ends sessions, no checkpoint wait
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
			os.RemoveAll(base)
		})
	}
	s.exited = exited
	s.logPath = logPath
	return s, nil
}

func (s *server) url(database string) string {
	return (&url.URL{Scheme: "postgres", User: url.UserPassword("postgres", s.password),
		Host: s.host, Path: "/" + database, RawQuery: "sslmode=disable"}).String()
}

// waitReady waits until the server accepts connections.
func (s *server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		select {
		case <-s.exited:
			log, _ := os.ReadFile(s.logPath)
			return fmt.Errorf("postgres exited at start:\n%s", log)
		default:
		}
		conn, err := pgx.Connect(ctx, s.admin)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		if ctx.Err() != nil {
			log, _ := os.ReadFile(s.logPath)
			return fmt.Errorf("postgres did not accept connections within 30s: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// database creates a database, dropped at the test's cleanup (while the
// server still runs), and returns its URL.
func (s *server) database(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		tb.Fatalf("testpg: connect to the server: %v", err)
	}
	defer conn.Close(context.Background())
	name := "test_" + randomHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("testpg: create database: %v", err)
	}
	tb.Cleanup(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.admin)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
	})
	return s.url(name)
}

// binDir returns the newest installed server's binary directory, or the
// one $LPMBISECT_PG_BIN names.
func binDir() (string, error) {
	dirs, _ := filepath.Glob(binGlob)
	where := binGlob
	if d := os.Getenv("LPMBISECT_PG_BIN"); d != "" {
		dirs, where = []string{d}, d
	}
	var usable []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				usable = append(usable, d)
			}
		}
	}
	if len(usable) == 0 {
		return "", fmt.Errorf("no initdb and postgres in %s", where)
	}
	// Newest major version first: /usr/lib/postgresql/15 sorts after 9.6
	// only numerically.
	sort.Slice(usable, func(i, j int) bool { return majorOf(usable[i]) > majorOf(usable[j]) })
	return usable[0], nil
}

func majorOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// serverCredential returns the credential the server runs with: nil (this
// process's own) unless running as root, where it is the postgres user's.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and there is no postgres user to run the server as: %v", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres user has uid %q gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// serverEnv is a minimal environment: the caller's PG* variables must not
// steer the server, and HOME must be one the server's user can read.
func serverEnv(home string) []string {
	env := []string{"HOME=" + home, "LC_ALL=C", "PATH=/usr/bin:/bin"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TZ=") {
			env = append(env, kv)
		}
	}
	return env
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

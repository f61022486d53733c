package fleet

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzJobArgs reads arbitrary job arguments of each kind, as a worker
// takes them from the database: arguments that validate marshal to JSON
// that unmarshals to the same arguments, which validate again; those that
// do not give an *ArgsError. The seeds testdata/fuzz/FuzzJobArgs/real-*
// are rows of river_job as the fleet's tests left them (boot jobs of an
// icount queue, paired and unpaired rounds, builds including ones a
// worker refuses; see captureArgsEnv), besides the arguments below.
func FuzzJobArgs(f *testing.F) {
	round := roundArgs{Version: argsVersion, Accel: "tcg", Guest: sumA, StuckAfterMS: 60_000, Boots: []bootSpec{validBoot().Boot}}
	build := buildArgs{Version: argsVersion, Tree: "bpf-next", Commit: sumA[:40], Config: "default", StuckAfterMS: 600_000}
	for i, a := range []any{validBoot(), round, build} {
		data, err := json.Marshal(a)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), data)
	}
	f.Add(uint8(0), []byte(`{"v":1,"accel":"icount","boot":{"kernel_args":["a\u001bb"]}}`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		var args interface{ Validate() error }
		switch kind % 3 {
		case 0:
			args = new(bootArgs)
		case 1:
			args = new(roundArgs)
		default:
			args = new(buildArgs)
		}
		if json.Unmarshal(data, args) != nil {
			return
		}
		if err := args.Validate(); err != nil {
			var ae *ArgsError
			if !errors.As(err, &ae) {
				t.Fatalf("Validate = %v; want an *ArgsError", err)
			}
			return
		}
		again, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(reflect.TypeOf(args).Elem()).Interface().(interface{ Validate() error })
		if err := json.Unmarshal(again, back); err != nil {
			t.Fatalf("marshalled arguments do not unmarshal: %v", err)
		}
		if !reflect.DeepEqual(args, back) {
			t.Fatalf("arguments round-trip to %+v; want %+v", back, args)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("round-tripped arguments fail Validate: %v", err)
		}
	})
}

// FuzzBlobChunks checks the chunks of a blob, split at cut and numbered
// 0 and second, against a row that claims size bytes in chunks chunks: a
// blob accepted is exactly the bytes its name hashes and its row claims,
// at most maxBlobSize.
func FuzzBlobChunks(f *testing.F) {
	f.Add([]byte("kernel image"), uint16(6), int64(12), 2, 1, false)
	f.Add([]byte("kernel image"), uint16(6), int64(12), 2, 1, true)
	f.Add([]byte("kernel image"), uint16(0), int64(1<<40), 2, 1, false)
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, size int64, chunks, second int, lie bool) {
		name := sha256.Sum256(data)
		if lie {
			name = sha256.Sum256(append([]byte("not "), data...))
		}
		sum := hex.EncodeToString(name[:])
		c := newBlobCheck(sum, size, chunks)
		at := min(int(cut), len(data))
		var got bytes.Buffer
		for i, part := range [][]byte{data[:at], data[at:]} {
			n := i
			if i == 1 {
				n = second
			}
			if c.chunk(n, part) != nil {
				return
			}
			got.Write(part)
		}
		if err := c.end(); err != nil {
			var be *BlobError
			if !errors.As(err, &be) || !errors.Is(err, ErrBlobCorrupt) {
				t.Fatalf("end = %v; want a *BlobError wrapping ErrBlobCorrupt", err)
			}
			return
		}
		if lie || int64(got.Len()) != size || size > maxBlobSize || chunks != 2 || !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("accepted %d bytes in 2 chunks (lie %v) for a row of %d bytes in %d", got.Len(), lie, size, chunks)
		}
	})
}

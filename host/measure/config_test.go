package measure

import (
	"reflect"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestFromConfig checks that every key of [measure] and [bench] that says
// how a kernel boots or what the guest runs reaches its option.
func TestFromConfig(t *testing.T) {
	f, err := config.Parse(`
[measure]
accel = "icount"
memory = 512
cpus = 1
boot_timeout = "2m"
progress_timeout = "30s"
qemu = "qemu-x"
cache_dir = "/c"
guest = "/g"
no_modules = true
append = " mitigations=off  quiet "
parallel = 3
[bench]
select = "lookup"
samples = 7
entries = 100
prefix_len = 16
batch_entries = 50
rounds = 2
`, "/")
	if err != nil {
		t.Fatal(err)
	}
	got := FromConfig(f.Measure, f.Bench)
	want := Options{
		Accel:    wire.AccelIcount,
		Plan:     GuestPlan{Bench: "lookup", Samples: 7, Entries: 100, PrefixLen: 16, BatchEntries: 50, Rounds: 2},
		MemoryMB: 512, CPUs: 1, BootTimeout: 2 * time.Minute, ProgressTimeout: 30 * time.Second,
		QEMU: "qemu-x", CacheDir: "/c", Guest: "/g", Append: []string{"mitigations=off", "quiet"}, NoModules: true, Parallel: 3,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromConfig =\n%+v\nwant\n%+v", got, want)
	}
	if d := FromConfig(config.Defaults().Measure, config.Defaults().Bench); len(d.Append) != 0 || d.Accel != wire.AccelAuto {
		t.Errorf("FromConfig(defaults): Append %q, Accel %q; want none and auto", d.Append, d.Accel)
	}
}

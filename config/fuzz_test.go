package config

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParse parses arbitrary configuration text: a file that parses
// passes its checks and, written back as TOML, parses to the same
// configuration. The seeds are the example configuration
// (kernels.example.toml) and the repository's configs.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../kernels.example.toml"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("[measure]\naccel = \"icount\"\nboot_timeout = \"90s\"\n[[kernel]]\nname = \"a\"\n")
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := Parse(text, "/etc/lpmbisect")
		if err != nil {
			return
		}
		if err := cfg.check(); err != nil {
			t.Fatalf("Parse accepted a configuration that fails its checks: %v", err)
		}
		var out bytes.Buffer
		if err := toml.NewEncoder(&out).Encode(cfg); err != nil {
			t.Fatalf("a parsed configuration does not encode: %v", err)
		}
		again, err := Parse(out.String(), "/etc/lpmbisect")
		if err != nil {
			t.Fatalf("re-encoded configuration does not parse: %v\n%s", err, out.String())
		}
		if !reflect.DeepEqual(cfg, again) {
			t.Fatalf("re-encoded configuration parses to\n%+v\nwant\n%+v\n%s", again, cfg, out.String())
		}
	})
}

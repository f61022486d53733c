// Package cliflag binds urfave/cli flags to variables: a flag shows the
// variable's value (a built-in default with a configuration file laid over
// it) as its default, and parsing writes the command line's value into
// it. So a flag given on the line wins over the file, which wins over the
// default, and every type stays what it is (a list stays a list).
package cliflag

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config"
)

// Flag is a flag bound to the variable Ptr points to.
type Flag struct {
	Name, Usage string
	Ptr         any // *string, *int, *uint64, *float64, *bool, *time.Duration, *[]string
	Alias, Env  string
	Hidden      bool
}

// Keys returns the flags of a configuration's keys or sections (see
// config.File.Fields), bound to f.
func Keys(f *config.File, names ...string) []Flag {
	var flags []Flag
	for _, fd := range f.Fields(names...) {
		flags = append(flags, Flag{Name: fd.Flag, Usage: fd.Usage, Ptr: fd.Ptr, Alias: fd.Alias, Env: fd.Env})
	}
	return flags
}

// Key is the flag of one key, with this command's usage.
func Key(f *config.File, key, usage string) Flag {
	fl := Keys(f, key)[0]
	fl.Usage = usage
	return fl
}

// CLI is the urfave/cli flag.
func (o Flag) CLI() cli.Flag {
	var aliases, envs []string
	if o.Alias != "" {
		aliases = []string{o.Alias}
	}
	if o.Env != "" {
		envs = []string{o.Env}
	}
	switch p := o.Ptr.(type) {
	case *string:
		return &cli.StringFlag{Name: o.Name, Usage: o.Usage, Aliases: aliases, EnvVars: envs, Hidden: o.Hidden, Value: *p, Destination: p}
	case *int:
		return &cli.IntFlag{Name: o.Name, Usage: o.Usage, Aliases: aliases, EnvVars: envs, Hidden: o.Hidden, Value: *p, Destination: p}
	case *uint64:
		return &cli.Uint64Flag{Name: o.Name, Usage: o.Usage, Aliases: aliases, EnvVars: envs, Hidden: o.Hidden, Value: *p, Destination: p}
	case *float64:
		return &cli.Float64Flag{Name: o.Name, Usage: o.Usage, Aliases: aliases, EnvVars: envs, Hidden: o.Hidden, Value: *p, Destination: p}
	case *bool:
		return &cli.BoolFlag{Name: o.Name, Usage: o.Usage, Aliases: aliases, EnvVars: envs, Hidden: o.Hidden, Value: *p, Destination: p}
	case *time.Duration:
		return &cli.DurationFlag{Name: o.Name, Usage: o.Usage, Aliases: aliases, EnvVars: envs, Hidden: o.Hidden, Value: *p, Destination: p}
	case *[]string:
		return &cli.StringSliceFlag{Name: o.Name, Usage: o.Usage, Aliases: aliases, EnvVars: envs, Hidden: o.Hidden, Value: cli.NewStringSlice(*p...)}
	}
	panic(fmt.Sprintf("flag --%s: no flag for %T", o.Name, o.Ptr))
}

// Bind returns the urfave/cli flags of flags, and set, which an action
// calls first: it writes the lists given on the line into their variables
// (urfave/cli v2 has no Destination for them).
func Bind(flags []Flag) (cliFlags []cli.Flag, set func(*cli.Context)) {
	for _, o := range flags {
		cliFlags = append(cliFlags, o.CLI())
	}
	return cliFlags, func(c *cli.Context) {
		for _, o := range flags {
			if p, ok := o.Ptr.(*[]string); ok && c.IsSet(o.Name) {
				*p = c.StringSlice(o.Name)
			}
		}
	}
}

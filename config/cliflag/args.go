package cliflag

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// ReorderArgs moves a command's flags before its arguments, so flags may go
// anywhere on the line, as with git or go test: urfave/cli v2 stops parsing
// flags at the first argument (urfave/cli#976). "--" ends the flags; what
// follows it stays an argument. A flag that takes a value moves with it.
func ReorderArgs(app *cli.App, args []string) []string {
	i := CommandIndex(args)
	if i < 0 {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil {
		return args
	}
	takesValue := valueFlags(cmd)
	// A subcommand (lpmbisect history import) owns the flags after it; the parent's
	// flags before it stay where they are.
	for j := i + 1; j < len(args) && args[j] != "--"; j++ {
		if a := args[j]; strings.HasPrefix(a, "-") {
			if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && takesValue[name] {
				j++
			}
			continue
		}
		sub := cmd.Command(args[j])
		if sub == nil {
			break
		}
		i, cmd, takesValue = j, sub, valueFlags(sub)
	}
	flags, rest := []string{}, []string{}
	tail := args[i+1:]
	for j := 0; j < len(tail); j++ {
		a := tail[j]
		switch {
		case a == "--":
			rest = append(rest, tail[j:]...)
			j = len(tail)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && j+1 < len(tail) {
				j++
				flags = append(flags, tail[j])
			}
		default:
			rest = append(rest, a)
		}
	}
	return slices.Concat(args[:i+1], flags, rest)
}

// valueFlags tells, by each name of cmd's flags, whether the flag takes a
// value (every flag but the booleans).
func valueFlags(cmd *cli.Command) map[string]bool {
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	return takesValue
}

// CommandIndex returns the index of the command in args (args[0] is the
// program), -1 when there is none.
func CommandIndex(args []string) int {
	for i := 1; i < len(args); i++ {
		if !strings.HasPrefix(args[i], "-") {
			return i
		}
	}
	return -1
}

// FlagValue returns the value of the flag --name on the command line, ""
// when it is not given: a configuration file must be read before the flags,
// whose defaults it sets.
func FlagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		flag, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != flag {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// SuggestFlag is the flag of cmd that the flag of a "flag provided but not
// defined" error most likely meant ("--accel" for --acel); "" for other
// errors and when none is close.
func SuggestFlag(cmd *cli.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok || cmd == nil {
		return ""
	}
	return cli.SuggestFlag(cmd.Flags, strings.TrimLeft(name, "-"), true)
}

// SuggestCommand is the command of app that name most likely meant, to
// append to a message: ` (did you mean "run"?)` as urfave/cli words it;
// "" when none is close.
func SuggestCommand(app *cli.App, name string) string {
	s := cli.SuggestCommand(app.Commands, name)
	if s == "" || s == fmt.Sprintf(cli.SuggestDidYouMeanTemplate, "") { // nothing alike at all
		return ""
	}
	return " (" + strings.ToLower(s[:1]) + s[1:] + ")"
}

package report

import (
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"time"
)

// jsonSchema is the part of JSON Schema (draft 7) that KCIDB's schema
// uses: a type, an object's properties (no others allowed unless Free), its
// required ones, an array's items, a string's pattern, enumeration, format
// and length, a number's bounds and constant.
type jsonSchema struct {
	Type     string // object, array, string, number, integer, boolean
	Props    map[string]*jsonSchema
	Free     bool // an object whose properties are free-form (misc)
	Required []string
	Items    *jsonSchema
	Pattern  string
	Enum     []string
	Format   string // date-time, uri, email
	MaxLen   int
	Min, Max *float64
	Const    *float64
}

func num(v float64) *float64 { return &v }

// kcidbSchemaV4_4 is KCIDB's I/O schema v4.4 as kernelci/kcidb-io defines
// it (kcidb_io/schema/v04_04.py), without its descriptions and examples:
// the objects' properties with their types, patterns, formats and
// enumerations, the required ones, and no other properties (the schema's
// additionalProperties: false) but under misc.
var kcidbSchemaV4_4 = func() *jsonSchema {
	str := func() *jsonSchema { return &jsonSchema{Type: "string"} }
	pattern := func(p string) *jsonSchema { return &jsonSchema{Type: "string", Pattern: p} }
	format := func(f string) *jsonSchema { return &jsonSchema{Type: "string", Format: f} }
	excerpt := func() *jsonSchema { return &jsonSchema{Type: "string", MaxLen: 16384} }
	typ := func(t string) *jsonSchema { return &jsonSchema{Type: t} }
	misc := func() *jsonSchema { return &jsonSchema{Type: "object", Free: true} }
	object := func(required []string, props map[string]*jsonSchema) *jsonSchema {
		return &jsonSchema{Type: "object", Props: props, Required: required}
	}
	const (
		origin   = `^[a-z0-9_]+$`
		originID = `^[a-z0-9_]+:.*$`
	)
	resources := func() *jsonSchema {
		return &jsonSchema{Type: "array", Items: object([]string{"name", "url"}, map[string]*jsonSchema{
			"name": pattern(`^[^/]+$`), "url": format("uri"),
		})}
	}
	status := func() *jsonSchema {
		return &jsonSchema{Type: "string", Enum: []string{"FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"}}
	}
	checkout := object([]string{"id", "origin"}, map[string]*jsonSchema{
		"_timestamp": format("date-time"), "id": pattern(originID), "origin": pattern(origin),
		"tree_name":             str(),
		"git_repository_url":    {Type: "string", Format: "uri", Pattern: `^(https|git)://.*$`},
		"git_commit_hash":       pattern(`^[0-9a-f]{40}$`),
		"git_commit_name":       str(),
		"git_repository_branch": str(),
		"patchset_files":        resources(),
		"patchset_hash":         pattern(`^$|^[0-9a-f]{64}$`),
		"message_id":            format("email"),
		"comment":               str(),
		"start_time":            format("date-time"),
		"contacts":              {Type: "array", Items: str()},
		"log_url":               format("uri"),
		"log_excerpt":           excerpt(),
		"valid":                 typ("boolean"),
		"misc":                  misc(),
	})
	build := object([]string{"checkout_id", "id", "origin"}, map[string]*jsonSchema{
		"_timestamp": format("date-time"), "checkout_id": pattern(originID), "id": pattern(originID), "origin": pattern(origin),
		"comment":      str(),
		"start_time":   format("date-time"),
		"duration":     typ("number"),
		"architecture": pattern(`^[a-z0-9_]*$`),
		"command":      str(),
		"compiler":     str(),
		"input_files":  resources(),
		"output_files": resources(),
		"config_name":  str(),
		"config_url":   format("uri"),
		"log_url":      format("uri"),
		"log_excerpt":  excerpt(),
		"valid":        typ("boolean"),
		"misc":         misc(),
	})
	test := object([]string{"build_id", "id", "origin"}, map[string]*jsonSchema{
		"_timestamp": format("date-time"), "build_id": pattern(originID), "id": pattern(originID), "origin": pattern(origin),
		"environment": object(nil, map[string]*jsonSchema{
			"compatible": {Type: "array", Items: pattern(`^[^ ]+(,[^ ]+)*$`)},
			"comment":    str(),
			"misc":       misc(),
		}),
		"path":        pattern(`^[.a-zA-Z0-9_-]*$`),
		"comment":     str(),
		"log_url":     format("uri"),
		"log_excerpt": excerpt(),
		"status":      status(),
		"number": object([]string{"value"}, map[string]*jsonSchema{
			"value":  typ("number"),
			"unit":   str(),
			"prefix": {Type: "string", Enum: []string{"metric", "binary"}},
		}),
		"waived":       typ("boolean"),
		"start_time":   format("date-time"),
		"duration":     typ("number"),
		"output_files": resources(),
		"misc":         misc(),
	})
	issue := object([]string{"id", "version", "origin"}, map[string]*jsonSchema{
		"_timestamp": format("date-time"), "id": pattern(originID), "origin": pattern(origin),
		"version":        {Type: "integer", Min: num(0)},
		"report_url":     format("uri"),
		"report_subject": str(),
		"culprit":        object(nil, map[string]*jsonSchema{"code": typ("boolean"), "tool": typ("boolean"), "harness": typ("boolean")}),
		"build_valid":    typ("boolean"),
		"test_status":    status(),
		"comment":        str(),
		"misc":           misc(),
	})
	incident := object([]string{"id", "origin", "issue_id", "issue_version"}, map[string]*jsonSchema{
		"_timestamp": format("date-time"), "id": pattern(originID), "origin": pattern(origin),
		"issue_id":      pattern(originID),
		"issue_version": {Type: "integer", Min: num(0)},
		"build_id":      pattern(originID),
		"test_id":       pattern(originID),
		"present":       typ("boolean"),
		"comment":       str(),
		"misc":          misc(),
	})
	list := func(item *jsonSchema) *jsonSchema { return &jsonSchema{Type: "array", Items: item} }
	return object([]string{"version"}, map[string]*jsonSchema{
		"version": object([]string{"major"}, map[string]*jsonSchema{
			"major": {Type: "integer", Const: num(4)},
			"minor": {Type: "integer", Min: num(0), Max: num(4)},
		}),
		"checkouts": list(checkout),
		"builds":    list(build),
		"tests":     list(test),
		"issues":    list(issue),
		"incidents": list(incident),
	})
}()

// validate checks v (decoded by encoding/json into any) against s, and
// returns one error per violation, each with the path where it is, as
// jsonschema does.
func (s *jsonSchema) validate(path string, v any) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	switch s.Type {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			bad("%v is not an object", v)
			return errs
		}
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok {
				bad("%q is a required property", r)
			}
		}
		if s.Free {
			return errs
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := s.Props[k]
			if !ok {
				bad("additional property %q is not allowed", k)
				continue
			}
			errs = append(errs, p.validate(path+"."+k, obj[k])...)
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			bad("%v is not an array", v)
			return errs
		}
		for i, item := range arr {
			errs = append(errs, s.Items.validate(fmt.Sprintf("%s[%d]", path, i), item)...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("%v is not a string", v)
			return errs
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			bad("%q does not match %q", str, s.Pattern)
		}
		if s.Enum != nil && !slices.Contains(s.Enum, str) {
			bad("%q is not one of %q", str, s.Enum)
		}
		if s.MaxLen > 0 && len([]rune(str)) > s.MaxLen {
			bad("%d characters, more than %d", len([]rune(str)), s.MaxLen)
		}
		if err := checkFormat(s.Format, str); err != nil {
			bad("%q is not a %s: %v", str, s.Format, err)
		}
	case "number", "integer":
		n, ok := v.(float64)
		if !ok {
			bad("%v is not a number", v)
			return errs
		}
		if s.Type == "integer" && n != float64(int64(n)) {
			bad("%v is not an integer", n)
		}
		if s.Const != nil && n != *s.Const {
			bad("%v was expected", *s.Const)
		}
		if s.Min != nil && n < *s.Min {
			bad("%v is less than the minimum of %v", n, *s.Min)
		}
		if s.Max != nil && n > *s.Max {
			bad("%v is greater than the maximum of %v", n, *s.Max)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("%v is not a boolean", v)
		}
	default:
		panic("jsonSchema: unknown type " + s.Type)
	}
	return errs
}

// checkFormat checks a string against a JSON Schema format: date-time is
// RFC 3339, uri an absolute URI, email an address.
func checkFormat(format, s string) error {
	switch format {
	case "":
		return nil
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		return err
	case "uri":
		u, err := url.Parse(s)
		if err == nil && u.Scheme == "" {
			err = fmt.Errorf("no scheme")
		}
		return err
	case "email":
		_, err := mail.ParseAddress(s)
		return err
	}
	panic("jsonSchema: unknown format " + format)
}

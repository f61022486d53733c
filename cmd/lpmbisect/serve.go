package main

import (
	"errors"
	"net"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/flow/nightly"
	"github.com/lpmbisect/lpmbisect/present/serve"
)

func serveCommand(r *invocation) *cli.Command {
	opts := append([]opt{configOpt(r)}, cliflag.Keys(r.File, "serve")...)
	return command("serve", "serve the history: series, trends, nights, alerts, bisections, and triage from the page", "", opts, func(c *cli.Context) error {
		if r.Path == "" {
			return usageError("serve needs --config FILE (its [nightly] db names the database)")
		}
		o := serve.Options{Log: r.log, HostNames: r.Serve.HostNames}
		if f := r.Serve.TokenFile; f != "" {
			tok, err := serve.ReadToken(f)
			if err != nil {
				return usageError("--token-file: %v", err)
			}
			o.Token = tok
		}
		db, err := nightly.OpenHistory(c.Context, r.File)
		if err != nil {
			return historyError(err, r)
		}
		defer db.Close()
		o.DB = db
		s, err := serve.New(o)
		if errors.Is(err, serve.ErrHostName) {
			return usageError("--host-name: %v", err)
		}
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", r.Serve.Listen)
		if err != nil {
			return usageError("--listen: %v (give a free host:port)", err)
		}
		mode := "read-only (no --token-file)"
		if o.Token != "" {
			mode = "changes need the token"
		}
		r.log.Printf("serving %s on http://%s/ (%s)", db.Location(), l.Addr(), mode)
		if w := serve.ListenWarning(l.Addr()); w != "" {
			r.log.Printf("warning: %s", w)
		}
		return s.Serve(c.Context, l)
	})
}

package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strconv"

	"github.com/frontier-llm/frontier/router"
)

func cmdRouter(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier router", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var prefill, decode stringsFlag
	fs.Var(&prefill, "prefill", "base `URL` of a prefill instance, such as http://127.0.0.1:8100 (repeat for more)")
	fs.Var(&decode, "decode", "base `URL` of a decode instance (repeat for more)")
	host := fs.String("host", "127.0.0.1", "`ADDRESS` to listen on")
	port := fs.Int("port", 8000, "`PORT` to listen on")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier router --prefill URL [--prefill URL...] --decode URL [--decode URL...] [--host H] [--port P]")
		fmt.Fprintln(fs.Output(), "\nAn OpenAI-compatible router for vLLM's prefill/decode disaggregation: each request is")
		fmt.Fprintln(fs.Output(), "prefilled on a prefill instance (max_tokens 1, kv_transfer_params do_remote_decode), then")
		fmt.Fprintln(fs.Output(), "sent with the kv_transfer_params it returned to a decode instance, whose answer is streamed")
		fmt.Fprintln(fs.Output(), "back. The instances run with --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'.")
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *port < 0 || *port > 65535 {
		return invalidf("--port %d: want a port from 0 to 65535", *port)
	}
	r, err := router.New(router.Config{Prefill: prefill, Decode: decode})
	if err != nil {
		return invalidf("%v", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	return router.Serve(ctx, ln, r, c.stderr)
}

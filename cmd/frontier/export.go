package main

import (
	"context"
	"fmt"
)

func cmdExport(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier export: not available in this build yet")
	return exitRuntime
}

package main

import (
	"context"
	"fmt"
)

func cmdHW(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier hw: not available in this build yet")
	return exitRuntime
}

package main

import (
	"context"
	"fmt"
)

func cmdEstimate(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier estimate: not available in this build yet")
	return exitRuntime
}

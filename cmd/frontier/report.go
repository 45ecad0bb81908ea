package main

import (
	"context"
	"fmt"
)

func cmdReport(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier report: not available in this build yet")
	return exitRuntime
}

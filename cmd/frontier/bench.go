package main

import (
	"context"
	"fmt"
)

func cmdBench(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier bench: not available in this build yet")
	return exitRuntime
}

package main

import (
	"context"
	"fmt"
)

func cmdCompare(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier compare: not available in this build yet")
	return exitRuntime
}

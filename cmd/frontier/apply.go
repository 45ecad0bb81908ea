package main

import (
	"context"
	"fmt"
)

func cmdApply(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier apply: not available in this build yet")
	return exitRuntime
}

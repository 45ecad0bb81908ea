package main

import (
	"context"
	"fmt"
)

func cmdPlan(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier plan: not available in this build yet")
	return exitRuntime
}

package main

import (
	"context"
	"fmt"
)

func cmdTestmodel(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier testmodel: not available in this build yet")
	return exitRuntime
}

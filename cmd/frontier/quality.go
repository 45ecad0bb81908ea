package main

import (
	"context"
	"fmt"
)

func cmdQuality(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier quality: not available in this build yet")
	return exitRuntime
}

package main

import (
	"context"
	"fmt"
)

func cmdSim(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier sim: not available in this build yet")
	return exitRuntime
}

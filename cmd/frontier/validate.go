package main

import (
	"context"
	"fmt"
)

func cmdValidate(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stderr, "frontier validate: not available in this build yet")
	return exitRuntime
}

//go:build race

package plan

// slowdown scales the time limits of tests: the race detector slows code several times.
const slowdown = 10

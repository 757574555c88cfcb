// Command gorstar reproduces the rStar2-Agent recipe end to end: non-reasoning SFT, multi-stage
// GRPO-RoC reinforcement learning with a sandboxed Python tool, and evaluation. The command line
// lives in package cmd.
package main

import (
	"os"

	"gorstar/cmd"
)

func main() {
	os.Exit(cmd.Main(os.Args, os.Stdout, os.Stderr))
}

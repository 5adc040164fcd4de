// Command printversion prints version.Write's output, as `ndiro version`
// does. The version tests build it with make release's flags and without
// them, then read what it prints.
package main

import (
	"fmt"
	"os"

	"ndiro/internal/version"
)

func main() {
	if err := version.Write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "printversion:", err)
		os.Exit(1)
	}
}

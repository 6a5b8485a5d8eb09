package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// profile writes a CPU profile of this run to the file AIRLOCK_CPUPROFILE
// names, for explaining a benchmark's figures (docs/benchmarks.md). The
// returned function stops it.
func profile() (stop func()) {
	path := os.Getenv("AIRLOCK_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock: AIRLOCK_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: AIRLOCK_CPUPROFILE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

package main

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory. Go's collector lets the heap grow to twice what is live before
// it collects; a commit over a 70,000-entry tree holds three manifests
// (some 37 MiB live), so the process would peak near 100 MiB for memory it
// does not need. A soft limit keeps the heap near what is live. A fixed
// limit would make the collector run without pause on a tree whose
// manifests alone exceed it, so the limit follows the live heap: whenever
// the live heap nears it, it is raised to one and a half times the live heap, and a large
// tree costs what it costs with no limit at all.

const (
	// memoryFloor is the soft limit of the Go runtime's memory, heap and
	// stacks; the binary's own pages come on top.
	memoryFloor = 48 << 20
	// memoryHeadroom: the limit is raised when the live heap passes this
	// share of it.
	memoryHeadroom = 0.9
	// gcPercent is the collector's target under the limit (GOGC).
	gcPercent = 400
)

// limitMemory sets the soft limit unless GOMEMLIMIT already did, and starts
// following the live heap. Under the limit, the collector waits for the
// heap to grow to five times what is live (unless GOGC says otherwise):
// a warm run allocates its manifests and is gone within a second, and at
// the default it spent a quarter of its CPU time collecting them (the
// limit still bounds the peak).
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return
	}
	debug.SetMemoryLimit(memoryFloor)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	go followLiveHeap()
}

func followLiveHeap() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	limit := int64(memoryFloor)
	for range time.Tick(20 * time.Millisecond) {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		live := int64(sample[0].Value.Uint64())
		if float64(live) > memoryHeadroom*float64(limit) {
			limit = 3 * live / 2
			debug.SetMemoryLimit(limit)
		}
	}
}

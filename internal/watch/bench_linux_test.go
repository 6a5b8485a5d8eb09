package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/watch"
)

// benchTree writes dirs directories of 10 files each, in two levels.
func benchTree(b *testing.B, dirs int) (string, *manifest.Manifest) {
	b.Helper()
	root := b.TempDir()
	for i := range dirs {
		d := filepath.Join(root, fmt.Sprintf("p%d", i%40), fmt.Sprintf("d%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", j)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	m, err := manifest.Walk(context.Background(), root, manifest.WalkOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return root, m
}

// BenchmarkStart: setting the watch of a tree of 1,400 directories
// (14,000 files), the cost a watched run adds before its command.
func BenchmarkStart(b *testing.B) {
	root, m := benchTree(b, 1400)
	dirs := dirsOf(m)
	b.ResetTimer()
	for range b.N {
		w, err := watch.Start(root, dirs)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStop: ending the watch of a tree of 100 directories (1,000
// files) once its command has ended, what a watched run waits for
// between its command's end and its settling.
func BenchmarkStop(b *testing.B) {
	root, m := benchTree(b, 100)
	dirs := dirsOf(m)
	for range b.N {
		b.StopTimer()
		w, err := watch.Start(root, dirs)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := w.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPatchTenWrites and BenchmarkWalk: measuring the same tree after
// a 10-file change, from the watch's names and by a walk.
func BenchmarkPatchTenWrites(b *testing.B) {
	root, m := benchTree(b, 1400)
	var paths []string
	for i := range 10 {
		p := fmt.Sprintf("p%d/d%d/f%d", i%40, i, i)
		os.WriteFile(filepath.Join(root, p), []byte("changed"), 0o644)
		paths = append(paths, p)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := manifest.Patch(context.Background(), root, m, paths, nil, manifest.WalkOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWalk(b *testing.B) {
	root, _ := benchTree(b, 1400)
	b.ResetTimer()
	for range b.N {
		if _, err := manifest.Walk(context.Background(), root, manifest.WalkOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

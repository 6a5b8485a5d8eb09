// Command gentree writes a synthetic project tree for airlock's benchmarks:
// a git repository of source files (committed and packed, as a real
// checkout's .git is) plus an ignored node_modules of many small package
// files, in the proportions of a large Go project with a JavaScript front
// end. The tree is deterministic for a given -files and -seed, so runs on
// different machines measure the same shape.
//
//	go run ./scripts/gentree -out /tmp/tree -files 63000
//
// About a fifth of -files are tracked source files; the rest are under
// node_modules. Sizes follow a long-tailed distribution averaging about
// 16 KB per file.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
)

func main() {
	out := flag.String("out", "", "directory to create (must not exist)")
	files := flag.Int("files", 13000, "about how many files to write (tracked source plus node_modules)")
	seed := flag.Uint64("seed", 1, "random seed")
	noGit := flag.Bool("no-git", false, "do not make the tree a git repository")
	flag.Parse()
	if *out == "" || *files < 10 {
		fmt.Fprintln(os.Stderr, "usage: gentree -out DIR [-files N] [-seed S] [-no-git]")
		os.Exit(2)
	}
	if err := run(*out, *files, *seed, !*noGit); err != nil {
		fmt.Fprintln(os.Stderr, "gentree:", err)
		os.Exit(1)
	}
}

type gen struct {
	rng   *rand.Rand
	text  []byte
	files int
	bytes int64
}

func run(out string, files int, seed uint64, withGit bool) error {
	if err := os.Mkdir(out, 0o755); err != nil {
		return err
	}
	g := &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	g.text = g.corpus(8 << 20)
	src := files / 5
	if err := g.source(out, src); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, ".gitignore"), []byte("node_modules/\n*.log\n"), 0o644); err != nil {
		return err
	}
	if withGit {
		if err := gitInit(out); err != nil {
			return err
		}
	}
	if err := g.nodeModules(filepath.Join(out, "node_modules"), files-src); err != nil {
		return err
	}
	fmt.Printf("%s: %d files, %.0f MB (without .git)\n", out, g.files, float64(g.bytes)/1e6)
	return nil
}

// corpus is pseudo-source text that files take slices of: compressible
// like real code, so git's pack is realistic in size.
func (g *gen) corpus(n int) []byte {
	words := strings.Fields("func return if else for range var const type struct interface package import err nil true false " +
		"string int64 byte map chan go defer select case switch break continue context ctx path file dir tree entry manifest " +
		"stage commit journal apply receipt digest base surface change set open close read write sync rename module export " +
		"function let await async class extends new this value index length push object array promise resolve reject")
	var b bytes.Buffer
	for b.Len() < n {
		indent := g.rng.IntN(4)
		b.WriteString(strings.Repeat("\t", indent))
		for w := 3 + g.rng.IntN(9); w > 0; w-- {
			b.WriteString(words[g.rng.IntN(len(words))])
			if g.rng.IntN(6) == 0 {
				fmt.Fprintf(&b, "%d", g.rng.IntN(100000))
			}
			b.WriteByte(' ')
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// size draws a file size: mostly small, a long tail of large files.
func (g *gen) size() int {
	switch r := g.rng.IntN(1000); {
	case r < 5:
		return 300_000 + g.rng.IntN(1_500_000)
	case r < 60:
		return 30_000 + g.rng.IntN(120_000)
	case r < 400:
		return 4_000 + g.rng.IntN(26_000)
	default:
		return 200 + g.rng.IntN(3_800)
	}
}

func (g *gen) write(path string, mode os.FileMode) error {
	n := g.size()
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n", path)
	for b.Len() < n {
		off := g.rng.IntN(len(g.text) - 1)
		end := min(len(g.text), off+n-b.Len())
		b.Write(g.text[off:end])
	}
	g.files++
	g.bytes += int64(b.Len())
	return os.WriteFile(path, b.Bytes(), mode)
}

// source writes n files in a tree of packages, 5 to 25 files each, 1 to
// 4 levels deep.
func (g *gen) source(root string, n int) error {
	exts := []string{".go", ".go", ".go", "_test.go", ".md", ".json", ".yaml", ".txt"}
	for pkg := 0; n > 0; pkg++ {
		depth := 1 + g.rng.IntN(4)
		parts := []string{root}
		for d := range depth {
			parts = append(parts, fmt.Sprintf("%s%d", []string{"internal", "pkg", "cmd", "lib", "util", "api"}[(pkg+d)%6], g.rng.IntN(12)))
		}
		dir := filepath.Join(parts...)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		k := min(n, 5+g.rng.IntN(21))
		for i := range k {
			mode := os.FileMode(0o644)
			if i == 0 && pkg%17 == 0 {
				mode = 0o755
			}
			if err := g.write(filepath.Join(dir, fmt.Sprintf("file%d_%d%s", pkg, i, exts[g.rng.IntN(len(exts))])), mode); err != nil {
				return err
			}
		}
		n -= k
	}
	return nil
}

// nodeModules writes n files as packages of 10 to 70 files with a
// package.json, lib/ and dist/ directories and links in .bin.
func (g *gen) nodeModules(root string, n int) error {
	bin := filepath.Join(root, ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for pkg := 0; n > 0; pkg++ {
		name := fmt.Sprintf("pkg-%d", pkg)
		if pkg%9 == 0 {
			name = filepath.Join(fmt.Sprintf("@scope%d", pkg%40), name)
		}
		dir := filepath.Join(root, name)
		for _, sub := range []string{"lib", "dist", "lib/internal"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				return err
			}
		}
		if err := g.write(filepath.Join(dir, "package.json"), 0o644); err != nil {
			return err
		}
		k := min(n-1, 10+g.rng.IntN(61))
		for i := range k {
			sub := []string{"lib", "dist", "lib/internal", "."}[g.rng.IntN(4)]
			if err := g.write(filepath.Join(dir, sub, fmt.Sprintf("m%d.js", i)), 0o644); err != nil {
				return err
			}
		}
		if pkg%10 == 0 {
			if err := os.Symlink(filepath.Join("..", name, "package.json"), filepath.Join(bin, strings.ReplaceAll(name, "/", "-"))); err != nil {
				return err
			}
		}
		n -= k + 1
	}
	return nil
}

func gitInit(dir string) error {
	for _, args := range [][]string{
		{"init", "-q"},
		{"config", "gc.auto", "0"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "synthetic tree"},
		{"gc", "-q"},
	} {
		if _, err := git.In(dir).Run(context.Background(), args...); err != nil {
			return err
		}
	}
	return nil
}

package watchd

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/airlockdev/airlock/internal/watch"
)

// BenchmarkTakeBack is what a warm run pays to have its tree watched from
// the claim on, on a 1,100-directory tree whose watch the daemon holds:
// "given back" takes the held watch itself (Take with back), "set anew"
// takes the daemon's word only and sets a watch of its own (watch.Start),
// as runs did before the watch came back.
func BenchmarkTakeBack(b *testing.B) {
	for _, back := range []bool{true, false} {
		name := "set anew"
		if back {
			name = "given back"
		}
		b.Run(name, func(b *testing.B) {
			d := b.TempDir()
			tree := filepath.Join(d, "tree")
			var dirs []string
			for i := range 1000 {
				rel := fmt.Sprintf("dir%03d/sub%d", i/10, i%10)
				write(b, filepath.Join(tree, rel, "f.txt"), "x")
				dirs = append(dirs, rel)
			}
			for i := range 100 {
				dirs = append(dirs, fmt.Sprintf("dir%03d", i))
			}
			c := New(filepath.Join(d, "state"))
			if _, err := c.Token(tree); err != nil {
				b.Fatal(err)
			}
			w, err := watch.Start(tree, dirs)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				b.StopTimer()
				w.Pause()
				fd, dm := w.Hand()
				n++
				key := "k" + strconv.Itoa(n)
				if err := c.Hold(key, tree, tree, fd, dm); err != nil {
					b.Fatal(err)
				}
				w.Close()
				b.StartTimer()
				_, kept, err := c.Take(key, back)
				if err != nil {
					b.Fatal(err)
				}
				if back {
					w, err = watch.Resume(tree, kept.FD, kept.Dirs)
				} else {
					w, err = watch.Start(tree, dirs)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			w.Stop()
		})
	}
}

package manifest

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample() []Entry {
	return []Entry{
		{Path: "a", Kind: KindDir, Mode: 0o755, MtimeNs: 1, CtimeNs: 2, Ino: 3, Dev: 4},
		{Path: "a/b", Kind: KindSymlink, Target: "../\x00x"},
		{Path: "a/\xff\n", Kind: KindFile, Mode: 0o755 | fs.ModeSetuid, Size: 1 << 40, MtimeNs: -5, CtimeNs: 1 << 62, Ino: 1<<64 - 1, Dev: 9, Digest: "sha256:ab"},
		{Path: "ab", Kind: KindOther},
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, es := range [][]Entry{nil, sample()} {
		got, err := decode(encode(es))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(es) {
			t.Fatalf("decoded %d entries, want %d", len(got), len(es))
		}
		for i := range es {
			if got[i] != es[i] {
				t.Errorf("entry %d: got %+v, want %+v", i, got[i], es[i])
			}
		}
	}
}

// reseal recomputes the checksum after a deliberate edit, so that the
// decoder's own checks, not the CRC, must catch it.
func reseal(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, crcTable()))
}

func TestDecodeRefuses(t *testing.T) {
	good := encode(sample())
	flipped := append([]byte(nil), good...)
	flipped[len(magicV2)+5] ^= 1
	unsorted := encode([]Entry{{Path: "b"}, {Path: "a"}})
	dup := encode([]Entry{{Path: "a"}, {Path: "a"}})
	badKind := encode([]Entry{{Path: "a", Kind: 9}})
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", good[:len(good)-9], "checksum"},
		{"bit flip", flipped, "checksum"},
		{"unsorted", unsorted, "out of order"},
		{"duplicate", dup, "out of order"},
		{"unknown kind", badKind, "unknown kind"},
		{"trailing", reseal(append(append([]byte(nil), good[:len(good)-4]...), 0, 0, 0, 0, 0)), "trailing"},
		{"short body", reseal(append([]byte(magicV2), 5, 0, 0, 0, 0)), "truncated"},
		{"magic only", []byte(magicV2), "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m")
			if err := os.WriteFile(p, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "corrupt manifest") {
				t.Fatalf("Load error = %v, want a corrupt manifest error saying %q", err, tt.want)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encode(sample()))
	f.Add(encode(nil))
	f.Add([]byte(magicV2))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := decode(data)
		if err != nil {
			return
		}
		for i := 1; i < len(es); i++ {
			if es[i-1].Path >= es[i].Path {
				t.Fatalf("decode accepted unsorted paths %q, %q", es[i-1].Path, es[i].Path)
			}
		}
		again, err := decode(encode(es))
		if err != nil || len(again) != len(es) {
			t.Fatalf("re-encoding a decoded manifest: %v", err)
		}
	})
}

// benchTree writes dirs directories of files files each.
func benchTree(b *testing.B, dirs, files int) string {
	b.Helper()
	root := b.TempDir()
	for d := range dirs {
		sub := filepath.Join(root, fmt.Sprintf("d%03d", d%50), fmt.Sprintf("s%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range files {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.go", f)), []byte("package x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}

// BenchmarkWalk measures a 5,000-file tree; AIRLOCK_BENCH_TREE names a
// bigger one to measure instead.
func BenchmarkWalk(b *testing.B) {
	root := os.Getenv("AIRLOCK_BENCH_TREE")
	if root == "" {
		root = benchTree(b, 200, 25)
	}
	n := 0
	for b.Loop() {
		m, err := Walk(context.Background(), root, WalkOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n = len(m.Entries)
	}
	b.ReportMetric(float64(n), "entries")
}

func BenchmarkLoad(b *testing.B) {
	root := benchTree(b, 200, 25)
	m, err := Walk(context.Background(), root, WalkOptions{})
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "m")
	if err := m.Save(p); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

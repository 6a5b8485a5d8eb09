package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"sync"
	"unsafe"
)

// The manifest file format. Version 1 was JSON: readable, but decoding a
// 60k-entry manifest took longer than walking the tree it describes, and
// every diff loads two. Version 2 is binary: the magic line, the entry
// count, then each entry as varints with its path stored as the length of
// the prefix it shares with the previous path plus the rest (sorted paths
// share long prefixes), and a CRC-32C of everything before it, so a torn or
// altered file is refused rather than read as a different tree. Load
// accepts both versions.
const magicV2 = "airlock.manifest/2\n"

// crcTable is made when a manifest is first encoded or decoded, not when
// the program starts: the helper every run starts uses none.
var crcTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// encode writes entries in the version 2 format.
func encode(es []Entry) []byte {
	b := make([]byte, 0, 64+len(es)*48)
	b = append(b, magicV2...)
	b = binary.AppendUvarint(b, uint64(len(es)))
	prev := ""
	for i := range es {
		e := &es[i]
		n := commonPrefix(prev, e.Path)
		b = binary.AppendUvarint(b, uint64(n))
		b = appendString(b, e.Path[n:])
		b = append(b, byte(e.Kind))
		b = binary.AppendUvarint(b, uint64(e.Mode))
		b = binary.AppendVarint(b, e.Size)
		b = binary.AppendVarint(b, e.MtimeNs)
		b = binary.AppendVarint(b, e.CtimeNs)
		b = binary.AppendUvarint(b, e.Ino)
		b = binary.AppendUvarint(b, e.Dev)
		b = appendString(b, e.Target)
		b = appendString(b, e.Digest)
		prev = e.Path
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable()))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

var errTruncated = errors.New("truncated")

// decoder reads version 2 fields, remembering the first failure.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errTruncated
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errTruncated
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// decode parses a version 2 manifest, refusing anything but a complete,
// intact file of sorted, distinct paths.
func decode(data []byte) ([]Entry, error) {
	if len(data) < len(magicV2)+4 || !bytes.HasPrefix(data, []byte(magicV2)) {
		return nil, errTruncated
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crcTable()) != sum {
		return nil, errors.New("checksum mismatch")
	}
	d := &decoder{b: body[len(magicV2):]}
	count := d.uvarint()
	// Every entry takes at least 11 bytes: no count can exceed that bound,
	// so a corrupt count cannot make Load allocate without limit.
	if d.err != nil || count > uint64(len(d.b))/11 {
		return nil, errTruncated
	}
	es := make([]Entry, count)
	// Paths, targets and digests are strings over a few large buffers
	// that nothing writes again, not an allocation each: decoding a large
	// tree's manifest is on every warm run's path.
	var a arena
	var prev string
	for i := range es {
		shared := d.uvarint()
		rest := d.bytes()
		if d.err != nil {
			return nil, d.err
		}
		if shared > uint64(len(prev)) {
			return nil, fmt.Errorf("entry %d shares more than the previous path", i)
		}
		path := a.join(prev[:shared], rest)
		if i > 0 && prev >= path {
			return nil, fmt.Errorf("entries out of order at %q", path)
		}
		e := &es[i]
		e.Path = path
		e.Kind = Kind(d.byte())
		e.Mode = fs.FileMode(d.uvarint())
		e.Size = d.varint()
		e.MtimeNs = d.varint()
		e.CtimeNs = d.varint()
		e.Ino = d.uvarint()
		e.Dev = d.uvarint()
		e.Target = a.join("", d.bytes())
		e.Digest = a.join("", d.bytes())
		if d.err != nil {
			return nil, d.err
		}
		if e.Kind > KindOther || e.Mode&^ModeMask != 0 {
			return nil, fmt.Errorf("entry %q: unknown kind or mode", path)
		}
		prev = path
	}
	if len(d.b) != 0 {
		return nil, errors.New("trailing data")
	}
	return es, nil
}

// arena makes strings out of large buffers, each written once and never
// again, so that many short strings cost a few allocations.
type arena struct{ buf []byte }

// join returns a+b as a string in the arena.
func (a *arena) join(x string, y []byte) string {
	n := len(x) + len(y)
	if n == 0 {
		return ""
	}
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(64<<10, n))
	}
	start := len(a.buf)
	a.buf = append(append(a.buf, x...), y...)
	return unsafe.String(&a.buf[start], n)
}

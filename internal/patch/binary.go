package patch

import (
	"bytes"
	"compress/zlib"
)

// base85 is git's alphabet for binary hunks (not Ascii85's).
const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// writeLiteral writes one `literal` hunk: the zlib-deflated content in
// base85 lines of up to 52 deflated bytes, each led by a letter that gives
// its byte count (A-Z for 1-26, a-z for 27-52), then an empty line.
func writeLiteral(w *errWriter, data []byte) {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(data) // writes to a bytes.Buffer cannot fail
	zw.Close()
	w.printf("literal %d\n", len(data))
	writeBase85Lines(w, z.Bytes())
	w.printf("\n")
}

// writeBase85Lines writes deflated bytes as binary hunk data lines.
func writeBase85Lines(w *errWriter, deflated []byte) {
	line := make([]byte, 0, 1+65+1)
	for len(deflated) > 0 {
		n := min(52, len(deflated))
		line = line[:0]
		if n <= 26 {
			line = append(line, byte('A'+n-1))
		} else {
			line = append(line, byte('a'+n-27))
		}
		line = encode85(line, deflated[:n])
		line = append(line, '\n')
		w.write(line)
		deflated = deflated[n:]
	}
}

// encode85 appends data in base85, four bytes (big-endian, the last group
// zero-padded) to five characters, most significant first.
func encode85(dst, data []byte) []byte {
	for len(data) > 0 {
		var acc uint32
		for i := range 4 {
			acc <<= 8
			if i < len(data) {
				acc |= uint32(data[i])
			}
		}
		var grp [5]byte
		for i := 4; i >= 0; i-- {
			grp[i] = base85[acc%85]
			acc /= 85
		}
		dst = append(dst, grp[:]...)
		data = data[min(4, len(data)):]
	}
	return dst
}

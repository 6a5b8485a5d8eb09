package manifest

import (
	"encoding/json"
	"strconv"
)

// AppendJSON appends e as MarshalJSON encodes it — the very bytes
// json.Marshal makes of its on-disk form (entryJSON) — written directly,
// not through encoding/json's reflection: a commit encodes an entry or two
// for every path it changes, and tens of thousands of them.
func (e Entry) AppendJSON(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = Bytes(e.Path).AppendJSON(b)
	b = append(b, `,"kind":`...)
	b = AppendJSONString(b, e.Kind.String())
	if e.Mode != 0 {
		b = append(b, `,"mode":`...)
		b = strconv.AppendUint(b, uint64(e.Mode), 10)
	}
	if e.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, e.Size, 10)
	}
	if e.MtimeNs != 0 {
		b = append(b, `,"mtime_ns":`...)
		b = strconv.AppendInt(b, e.MtimeNs, 10)
	}
	if e.CtimeNs != 0 {
		b = append(b, `,"ctime_ns":`...)
		b = strconv.AppendInt(b, e.CtimeNs, 10)
	}
	if e.Ino != 0 {
		b = append(b, `,"ino":`...)
		b = strconv.AppendUint(b, e.Ino, 10)
	}
	if e.Dev != 0 {
		b = append(b, `,"dev":`...)
		b = strconv.AppendUint(b, e.Dev, 10)
	}
	if e.Target != "" {
		b = append(b, `,"target":`...)
		b = Bytes(e.Target).AppendJSON(b)
	}
	if e.Digest != "" {
		b = append(b, `,"digest":`...)
		b = AppendJSONString(b, e.Digest)
	}
	return append(b, '}')
}

// AppendJSON appends s as MarshalJSON encodes it.
func (s Bytes) AppendJSON(b []byte) []byte {
	if plain(string(s)) {
		return appendQuoted(b, string(s))
	}
	j, err := s.MarshalJSON()
	if err != nil { // not reached: a string or a base64 object always encodes
		panic(err)
	}
	return append(b, j...)
}

// AppendJSONString appends s as json.Marshal encodes a string.
func AppendJSONString(b []byte, s string) []byte {
	if plain(s) {
		return appendQuoted(b, s)
	}
	j, err := json.Marshal(s)
	if err != nil { // not reached: a string always encodes
		panic(err)
	}
	return append(b, j...)
}

// plain reports whether json.Marshal writes s as it is between quotes:
// printable ASCII but for the characters it escapes (the quote, the
// backslash, and <, > and & for HTML).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

package paimon

import "unsafe"

// arena hands out what a decoded list is made of from a few shared chunks instead of
// one heap object per value: the copied record bytes that rows and binaries are
// sub-slices of, the bytes of strings, column lists, optional longs, null counts and
// file sources. Decoding 10,000 data files one allocation per value spends about a third
// of its time allocating and in the garbage collector. Chunks are never grown in place,
// so what was handed out stays valid; slices are handed out with their capacity capped,
// so that a caller appending to one never writes into a neighbour.
type arena struct {
	bytes []byte
	// text holds the bytes of strings and is never handed out as a []byte, so the
	// strings made over it (unsafe.String) are never mutated.
	text []byte
	strs []string
	i64  []int64
	p64  []*int64
	src  []FileSource
	// lastArr and lastStrs remember, per field position, the last string array decoded
	// there: the column lists of consecutive data files are usually identical.
	lastArr  [dataFileArity][]byte
	lastStrs [dataFileArity][]string
}

const (
	// arenaChunk is the length of the typed chunks.
	arenaChunk = 4096
	// arenaBytesChunk keeps byte chunks within Go's small-object size classes, which are
	// reused from span caches; one large copy of the input would fault in fresh pages.
	arenaBytesChunk = 32 << 10
)

// copyBytes returns a copy of b, capacity capped, carved from a shared chunk.
func (a *arena) copyBytes(b []byte) []byte {
	n := len(b)
	if n > arenaBytesChunk/4 {
		return append([]byte(nil), b...)
	}
	if cap(a.bytes)-len(a.bytes) < n {
		a.bytes = make([]byte, 0, arenaBytesChunk)
	}
	l := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return a.bytes[l : l+n : l+n]
}

// str returns a copy of b as a string, carved from the text chunk.
func (a *arena) str(b []byte) string {
	n := len(b)
	if n == 0 || n > arenaBytesChunk/4 {
		return string(b)
	}
	if cap(a.text)-len(a.text) < n {
		a.text = make([]byte, 0, arenaBytesChunk)
	}
	l := len(a.text)
	a.text = append(a.text, b...)
	return unsafe.String(&a.text[l], n)
}

// strings returns a zeroed slice of n strings.
func (a *arena) strings(n int) []string {
	if n > arenaChunk/8 {
		return make([]string, n)
	}
	if cap(a.strs)-len(a.strs) < n {
		a.strs = make([]string, 0, arenaChunk)
	}
	l := len(a.strs)
	a.strs = a.strs[:l+n]
	return a.strs[l : l+n : l+n]
}

func (a *arena) strPtr(s string) *string {
	p := &a.strings(1)[0]
	*p = s
	return p
}

func (a *arena) long(v int64) *int64 {
	if len(a.i64) == cap(a.i64) {
		a.i64 = make([]int64, 0, arenaChunk)
	}
	a.i64 = append(a.i64, v)
	return &a.i64[len(a.i64)-1]
}

func (a *arena) source(v FileSource) *FileSource {
	if len(a.src) == cap(a.src) {
		a.src = make([]FileSource, 0, arenaChunk)
	}
	a.src = append(a.src, v)
	return &a.src[len(a.src)-1]
}

// longs returns a zeroed slice of n longs.
func (a *arena) longs(n int) []int64 {
	if n > arenaChunk/8 {
		return make([]int64, n)
	}
	if cap(a.i64)-len(a.i64) < n {
		a.i64 = make([]int64, 0, arenaChunk)
	}
	l := len(a.i64)
	a.i64 = a.i64[:l+n]
	return a.i64[l : l+n : l+n]
}

// ptrs returns a zeroed slice of n pointers.
func (a *arena) ptrs(n int) []*int64 {
	if n > arenaChunk/8 {
		return make([]*int64, n)
	}
	if cap(a.p64)-len(a.p64) < n {
		a.p64 = make([]*int64, 0, arenaChunk)
	}
	l := len(a.p64)
	a.p64 = a.p64[:l+n]
	return a.p64[l : l+n : l+n]
}

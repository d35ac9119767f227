package paimon

import "unsafe"

// arena hands out what a decoded list is made of from a few shared chunks instead of
// one heap object per value: the copied bytes of rows and binaries, the bytes of
// strings, column lists, optional longs, null counts and file sources. Decoding 10,000
// data files one allocation per value spent about a third of its time allocating and in
// the garbage collector. Chunks are never grown in place, so what was handed out stays
// valid; slices are handed out with their capacity capped, so that a caller appending to
// one never writes into a neighbour.
type arena struct {
	bytes pool[byte]
	// text holds the bytes of strings and is never handed out as a []byte, so the
	// strings made over it (unsafe.String) are never mutated.
	text pool[byte]
	strs pool[string]
	i64  pool[int64]
	p64  pool[*int64]
	src  pool[FileSource]
	// lastArr and lastStrs remember, per field position, the last string array decoded
	// there: the column lists of consecutive data files are usually identical.
	lastArr  [dataFileArity][]byte
	lastStrs [dataFileArity][]string
}

// pool carves slices from a chunk. Taking one stores only the integer n: the decoder
// (and so the arena) lives on the heap, and storing a slice header there on every take
// would cost a write barrier each time the collector is marking, which it usually is
// for part of a large decode.
type pool[T any] struct {
	chunk []T
	n     int
}

// take returns a zeroed slice of n elements, from a new chunk of size elements when
// the current one is full; one of more than size/4 elements gets its own. An empty one
// is not nil: nil stands for null in the decoded model.
func (p *pool[T]) take(n, size int) []T {
	if n == 0 {
		return []T{}
	}
	if n > size/4 {
		return make([]T, n)
	}
	if len(p.chunk)-p.n < n {
		p.chunk, p.n = make([]T, size), 0
	}
	s := p.chunk[p.n : p.n+n : p.n+n]
	p.n += n
	return s
}

const (
	// arenaChunk is the length of the typed chunks.
	arenaChunk = 4096
	// arenaBytesChunk is the size of the byte chunks.
	arenaBytesChunk = 32 << 10
)

// copyBytes returns a copy of b.
func (a *arena) copyBytes(b []byte) []byte {
	out := a.bytes.take(len(b), arenaBytesChunk)
	copy(out, b)
	return out
}

// str returns a copy of b as a string.
func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	out := a.text.take(len(b), arenaBytesChunk)
	copy(out, b)
	return unsafe.String(&out[0], len(out))
}

// strings returns a zeroed slice of n strings.
func (a *arena) strings(n int) []string { return a.strs.take(n, arenaChunk) }

func (a *arena) strPtr(s string) *string {
	p := &a.strs.take(1, arenaChunk)[0]
	*p = s
	return p
}

func (a *arena) long(v int64) *int64 {
	p := &a.i64.take(1, arenaChunk)[0]
	*p = v
	return p
}

// longs returns a zeroed slice of n longs.
func (a *arena) longs(n int) []int64 { return a.i64.take(n, arenaChunk) }

// ptrs returns a zeroed slice of n pointers.
func (a *arena) ptrs(n int) []*int64 { return a.p64.take(n, arenaChunk) }

func (a *arena) source(v FileSource) *FileSource {
	p := &a.src.take(1, arenaChunk)[0]
	*p = v
	return p
}

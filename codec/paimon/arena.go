package paimon

// arena hands out the small pointers and slices a decoded list is made of (optional
// longs, null counts, file sources) from shared chunks, and interns the column and file
// names that repeat from file to file. Decoding 10,000 data files otherwise spends most
// of its time allocating. Chunks are never grown in place, so handed-out pointers stay
// valid; a nil arena allocates each value on its own.
type arena struct {
	bytes  []byte
	i64    []int64
	p64    []*int64
	src    []FileSource
	intern map[string]string
	// lastArr and lastStrs remember, per field position, the last string array decoded
	// there: the column lists of consecutive data files are usually identical.
	lastArr  [dataFileArity][]byte
	lastStrs [dataFileArity][]string
}

const arenaChunk = 4096

func (a *arena) long(v int64) *int64 {
	if a == nil {
		p := new(int64)
		*p = v
		return p
	}
	if len(a.i64) == cap(a.i64) {
		a.i64 = make([]int64, 0, arenaChunk)
	}
	a.i64 = append(a.i64, v)
	return &a.i64[len(a.i64)-1]
}

func (a *arena) source(v FileSource) *FileSource {
	if a == nil {
		p := new(FileSource)
		*p = v
		return p
	}
	if len(a.src) == cap(a.src) {
		a.src = make([]FileSource, 0, arenaChunk)
	}
	a.src = append(a.src, v)
	return &a.src[len(a.src)-1]
}

// ptrs returns a zeroed slice of n pointers with its capacity capped, so appending to
// it never writes into a neighbour.
func (a *arena) ptrs(n int) []*int64 {
	if a == nil || n > arenaChunk/8 {
		return make([]*int64, n)
	}
	if cap(a.p64)-len(a.p64) < n {
		a.p64 = make([]*int64, 0, arenaChunk)
	}
	l := len(a.p64)
	a.p64 = a.p64[:l+n]
	return a.p64[l : l+n : l+n]
}

// str returns b as a string, shared with earlier equal strings when b is short.
func (a *arena) str(b []byte) string {
	if a == nil || len(b) > 64 {
		return string(b)
	}
	if s, ok := a.intern[string(b)]; ok {
		return s
	}
	if a.intern == nil {
		a.intern = make(map[string]string)
	}
	if len(a.intern) >= arenaChunk {
		return string(b)
	}
	s := string(b)
	a.intern[s] = s
	return s
}

// arenaBytesChunk keeps byte chunks within Go's small-object size classes, which are
// reused from span caches; one large copy of the input would fault in fresh pages.
const arenaBytesChunk = 32 << 10

// copyBytes returns a copy of b, capacity capped, carved from a shared chunk.
func (a *arena) copyBytes(b []byte) []byte {
	n := len(b)
	if a == nil || n > arenaBytesChunk/4 {
		return append([]byte(nil), b...)
	}
	if cap(a.bytes)-len(a.bytes) < n {
		a.bytes = make([]byte, 0, arenaBytesChunk)
	}
	l := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return a.bytes[l : l+n : l+n]
}

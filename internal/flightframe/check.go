package flightframe

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// A relayed record batch is sent on as the upstream wrote it, and a
// decoded one is read by the IPC reader, which takes the header's word
// for the buffers' sizes: a batch whose field nodes claim more rows than
// its buffers hold decodes into arrays that read past their memory when
// used (a panic in Go, garbage or a crash in DuckDB's scan or a client's
// reader). Layout.Check compares the header with the stream's schema and
// the body's size before a batch goes anywhere: the node and buffer
// counts, every buffer within the body, each buffer at least as long as
// its node's length needs, and the first and last offsets of a
// variable-length column within its data (two reads from the body). It
// costs a walk over a few dozen header fields per batch; it does not
// read the values (offsets between the first and the last, UTF-8),
// which only a full validation would, at a pass over every byte.

// Layout is what the record batches of a stream with a given schema
// hold: per field node, in the IPC's depth-first order, the buffers it
// has.
type Layout struct {
	nodes   []nodeLayout
	buffers int
}

// nodeLayout is one field node's buffers after the validity bitmap.
type nodeLayout struct {
	name string
	kind layoutKind
	// width is a fixed-width value's size in bits, or an offset's in
	// bytes (4 or 8).
	width int
	// size is a fixed-size list's list size.
	size int
	// children is how many child nodes follow (a list's one, a
	// struct's fields).
	children int
}

type layoutKind byte

const (
	fixedWidth    layoutKind = iota // validity, values
	varBinary                       // validity, offsets, data
	varList                         // validity, offsets; one child
	fixedSizeList                   // validity; one child
	structKind                      // validity; children
)

// NewLayout is the layout of s's record batches, or nil when a column
// has a type it does not describe (dictionaries, views, unions,
// run-end encoded, null, extension types): such batches are decoded by
// the IPC reader and not relayed.
func NewLayout(s *arrow.Schema) *Layout {
	l := &Layout{}
	for _, f := range s.Fields() {
		if !l.add(f.Name, f.Type) {
			return nil
		}
	}
	return l
}

func (l *Layout) add(name string, t arrow.DataType) bool {
	n := nodeLayout{name: name}
	switch t := t.(type) {
	case *arrow.BinaryType, *arrow.StringType:
		n.kind, n.width = varBinary, 4
	case *arrow.LargeBinaryType, *arrow.LargeStringType:
		n.kind, n.width = varBinary, 8
	case *arrow.ListType, *arrow.MapType:
		n.kind, n.width, n.children = varList, 4, 1
	case *arrow.LargeListType:
		n.kind, n.width, n.children = varList, 8, 1
	case *arrow.FixedSizeListType:
		n.kind, n.size, n.children = fixedSizeList, int(t.Len()), 1
	case *arrow.StructType:
		n.kind, n.children = structKind, t.NumFields()
	case arrow.FixedWidthDataType:
		if t.ID() == arrow.DICTIONARY || t.ID() == arrow.EXTENSION || t.BitWidth() <= 0 {
			return false
		}
		n.kind, n.width = fixedWidth, t.BitWidth()
	default:
		return false
	}
	l.nodes = append(l.nodes, n)
	l.buffers += 1 + map[layoutKind]int{fixedWidth: 1, varBinary: 2, varList: 1}[n.kind]
	switch t := t.(type) {
	case *arrow.MapType:
		return l.add(name, t.Elem())
	case arrow.ListLikeType:
		return l.add(name, t.Elem())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !l.add(name+"."+f.Name, f.Type) {
				return false
			}
		}
	}
	return true
}

// Check reports how the record batch f does not hold what its header
// and l say, or nil. A compressed body's buffers are checked to lie
// within the body, their sizes (known only decompressed) are not.
func (l *Layout) Check(f *Frame) error {
	if f.kind != KindRecordBatch {
		return fmt.Errorf("flightframe: not a record batch")
	}
	if f.variadic {
		return fmt.Errorf("flightframe: a record batch with variadic buffers in a stream of no view column")
	}
	if f.nodes != len(l.nodes) || f.buffers != l.buffers {
		return fmt.Errorf("flightframe: a record batch of %d field nodes and %d buffers in a stream of %d and %d", f.nodes, f.buffers, len(l.nodes), l.buffers)
	}
	c := checker{f: f, l: l}
	for c.node < len(l.nodes) {
		if err := c.check(f.rows); err != nil {
			return err
		}
	}
	return nil
}

// checker walks a batch's nodes and buffers in order.
type checker struct {
	f            *Frame
	l            *Layout
	node, buffer int
}

// check checks the next node, which must be length rows long (-1: any
// length of at least -min, for a list's child), and its children.
func (c *checker) check(rows int64) error {
	f, n := c.f, c.l.nodes[c.node]
	at := int(f.nodesAt) + c.node*fieldNodeSize
	length := int64(binary.LittleEndian.Uint64(f.header[at:]))
	nulls := int64(binary.LittleEndian.Uint64(f.header[at+8:]))
	c.node++
	bad := func(format string, args ...any) error {
		return fmt.Errorf("flightframe: a record batch whose column %q %s", n.name, fmt.Sprintf(format, args...))
	}
	switch {
	case length < 0 || nulls < 0 || nulls > length:
		return bad("has a field node of length %d with %d nulls", length, nulls)
	case rows >= 0 && length != rows:
		return bad("has %d rows in a batch of %d", length, rows)
	case rows < 0 && length < -rows-1:
		return bad("has %d values where its offsets reach %d", length, -rows-1)
	}
	validity, err := c.next(bad)
	if err != nil {
		return err
	}
	if nulls > 0 {
		if err := c.atLeast(validity, bitBytes(length, 1), bad, "validity bitmap"); err != nil {
			return err
		}
	}
	switch n.kind {
	case fixedWidth:
		values, err := c.next(bad)
		if err != nil {
			return err
		}
		return c.atLeast(values, bitBytes(length, n.width), bad, "values")
	case varBinary:
		last, err := c.offsets(length, n.width, bad)
		if err != nil {
			return err
		}
		data, err := c.next(bad)
		if err != nil {
			return err
		}
		return c.atLeast(data, last, bad, "data")
	case varList:
		last, err := c.offsets(length, n.width, bad)
		if err != nil {
			return err
		}
		return c.check(-last - 1)
	case fixedSizeList:
		if n.size > 0 && length > (1<<62)/int64(n.size) {
			return bad("has %d lists of %d values", length, n.size)
		}
		return c.check(length * int64(n.size))
	default: // structKind
		for range n.children {
			if err := c.check(length); err != nil {
				return err
			}
		}
	}
	return nil
}

// span is a buffer's place in the body.
type span struct{ off, len int64 }

// next is the node's next buffer, which must lie within the body.
func (c *checker) next(bad func(string, ...any) error) (span, error) {
	at := int(c.f.buffersAt) + c.buffer*bufferSize
	b := span{int64(binary.LittleEndian.Uint64(c.f.header[at:])), int64(binary.LittleEndian.Uint64(c.f.header[at+8:]))}
	c.buffer++
	if b.off < 0 || b.len < 0 || b.off > int64(c.f.bodyLen) || b.len > int64(c.f.bodyLen)-b.off {
		return b, bad("has a buffer of %d bytes at %d in a body of %d", b.len, b.off, c.f.bodyLen)
	}
	return b, nil
}

// atLeast checks that an uncompressed buffer holds n bytes.
func (c *checker) atLeast(b span, n int64, bad func(string, ...any) error, what string) error {
	if c.f.codec == None && b.len < n {
		return bad("has %d bytes of %s, %d needed", b.len, what, n)
	}
	return nil
}

// offsets checks the offsets buffer of a node of length values and
// returns its last offset: the offsets of a non-empty node are length+1
// of them, the first at least 0, the last not before it. A compressed
// body's offsets are not read: its last offset is taken as 0.
func (c *checker) offsets(length int64, width int, bad func(string, ...any) error) (int64, error) {
	b, err := c.next(bad)
	if err != nil || length == 0 || c.f.codec != None {
		return 0, err
	}
	if length >= b.len/int64(width) { // fewer than length+1 offsets
		return 0, bad("has %d bytes of offsets for %d values", b.len, length)
	}
	first, last := c.offset(b.off, width), c.offset(b.off+length*int64(width), width)
	if first < 0 || last < first {
		return 0, bad("has offsets from %d to %d", first, last)
	}
	return last, nil
}

// offset reads the offset of width bytes at off in the body.
func (c *checker) offset(off int64, width int) int64 {
	var v [8]byte
	copyAt(c.f.data, c.f.bodyOff+int(off), v[:width])
	if width == 4 {
		return int64(int32(binary.LittleEndian.Uint32(v[:])))
	}
	return int64(binary.LittleEndian.Uint64(v[:]))
}

// bitBytes is the bytes n values of bits bits each take.
func bitBytes(n int64, bits int) int64 {
	if n > (1<<62)/int64(bits) {
		return 1 << 62
	}
	return (n*int64(bits) + 7) / 8
}

package flightframe

import (
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// ClientCodec is protobuf for every message but a received FlightData,
// whose fields alias one copy of the message (Decode). Protobuf's codec
// gathers the message into a buffer of gRPC's pool, then copies the IPC
// body out of it again, so that the buffer can go back to the pool: a
// result read through it costs two copies of every batch and two
// buffers to clear, against one copy here, on the Go heap, kept by
// the batches that reference it. Received into a Frame, a message is not
// copied at all.
type ClientCodec struct{ proto encoding.CodecV2 }

// NewClientCodec returns the codec; pass it to grpc.ForceCodecV2.
func NewClientCodec() ClientCodec { return ClientCodec{proto: encoding.GetCodecV2("proto")} }

// Marshal is protobuf's.
func (c ClientCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

// Unmarshal decodes a FlightData aliasing a copy of data, keeps a Frame
// as received (it references gRPC's buffers until released), and decodes
// any other message (or a FlightData with fields Decode leaves alone) by
// protobuf.
func (c ClientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*Frame); ok {
		return f.parse(data)
	}
	if fd, ok := v.(*flight.FlightData); ok {
		if Decode(Materialize(data), fd) {
			return nil
		}
		fd.Reset()
	}
	return c.proto.Unmarshal(data, v)
}

// Name is protobuf's: the content subtype on the wire is unchanged.
func (c ClientCodec) Name() string { return c.proto.Name() }

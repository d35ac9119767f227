package flightframe

import (
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// FlightData field numbers (Flight.proto).
const (
	FieldDescriptor  protowire.Number = 1
	FieldDataHeader  protowire.Number = 2
	FieldAppMetadata protowire.Number = 3
	FieldDataBody    protowire.Number = 1000
)

// Decode decodes b into fd, its byte fields aliasing b, and reports
// whether it could: a field it does not know (or a descriptor given
// twice, which protobuf would merge) is left to protobuf. fd must be
// empty.
func Decode(b []byte, fd *flight.FlightData) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return false
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case FieldDescriptor:
			if fd.FlightDescriptor != nil {
				return false
			}
			fd.FlightDescriptor = &flight.FlightDescriptor{}
			if proto.Unmarshal(v, fd.FlightDescriptor) != nil {
				return false
			}
		case FieldDataHeader:
			fd.DataHeader = v
		case FieldAppMetadata:
			fd.AppMetadata = v
		case FieldDataBody:
			fd.DataBody = v
		default:
			return false
		}
	}
	return true
}

package driver

import (
	"net"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/uaxai/uaxai/sdk/internal/proto"
)

// The bounds of one model-service request (sdk/internal/proto's, which
// the sdk's models split their batches by). A plugin whose request
// exceeds one gets an InvalidArgument status naming it (or, past
// MaxServiceMessage, gRPC's ResourceExhausted).
const (
	MaxServiceInputs        = proto.MaxServiceInputs
	MaxServiceValues        = proto.MaxServiceValues
	MaxServiceWindows       = proto.MaxServiceWindows
	MaxServiceStarts        = proto.MaxServiceStarts
	MaxServicePerturbations = proto.MaxServicePerturbations
	MaxServicePairs         = proto.MaxServicePairs
	MaxServiceLayerName     = proto.MaxServiceLayerName
	MaxServiceMessage       = proto.MaxServiceMessage
)

// The bounds of the service's connections. MaxServiceConnections is the
// most connections the service keeps open at once (a plugin process makes
// one); a connection past it is closed at once. maxServiceStreams is the
// most calls one connection may have open at once (HTTP/2
// SETTINGS_MAX_CONCURRENT_STREAMS: a client queues the others itself),
// and serviceWindow each call's flow-control window: the bytes of a
// waiting call the transport buffers.
const (
	MaxServiceConnections = 32
	maxServiceStreams     = 8
	serviceWindow         = 256 << 10
)

// MaxServiceBatch is proto.MaxServiceBatch: the most inputs of n values
// one request may carry.
func MaxServiceBatch(n int) int { return proto.MaxServiceBatch(n) }

// fieldLimit bounds one field of a request before the request is decoded:
// the bytes of a bytes or string field (summed over its occurrences), or
// the elements of a repeated integer field, packed or not.
type fieldLimit struct {
	num      protowire.Number
	name     string
	max      int
	repeated bool
}

// The fields of the requests, by the numbers of sdk/internal/pb's
// plugin.proto.
var (
	batchLimits = []fieldLimit{
		{2, "x", 4 * MaxServiceValues, false},
		{3, "targets", MaxServiceInputs, true},
	}
	layerLimits = []fieldLimit{
		{2, "layer", MaxServiceLayerName, false},
		{3, "x", 4 * MaxServiceValues, false},
		{4, "targets", MaxServiceInputs, true},
	}
	windowsLimits = []fieldLimit{
		{2, "x", 4 * MaxServiceValues, false},
		{3, "targets", MaxServiceInputs, true},
		{4, "starts", MaxServiceStarts, true},
		{7, "baseline_x", 4 * MaxServiceValues, false},
	}
	spansLimits = []fieldLimit{
		{2, "x", 4 * MaxServiceValues, false},
		{4, "bounds", 2 * MaxServicePairs, true},
		{5, "ends", MaxServicePerturbations, true},
		{7, "channels", MaxServicePairs, true},
	}
)

// checkRaw walks the wire form of a request and refuses it, before it is
// decoded, if a field exceeds its limit: packed integers take up to 8
// times their wire bytes once decoded, so a message within
// MaxServiceMessage could otherwise become 8 times that. It also refuses
// what no request of the protocol holds (groups, malformed tags), so that
// the decoder sees only well-formed messages.
func checkRaw(method string, b []byte, limits []fieldLimit) error {
	var counts [16]int
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return status.Errorf(codes.InvalidArgument, "%s: malformed request: %v", method, protowire.ParseError(n))
		}
		b = b[n:]
		add := 1
		switch typ {
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(b)
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			add = len(v)
			if l := limitOf(limits, num); l != nil && l.repeated {
				add = packedLen(v)
			}
		default:
			return status.Errorf(codes.InvalidArgument, "%s: malformed request: field %d has wire type %d; the protocol's requests hold varints, fixed numbers and length-delimited fields only", method, num, typ)
		}
		if n < 0 {
			return status.Errorf(codes.InvalidArgument, "%s: malformed request: field %d: %v", method, num, protowire.ParseError(n))
		}
		b = b[n:]
		if int(num) < len(counts) {
			counts[num] += add
		}
	}
	for _, l := range limits {
		if c := counts[l.num]; c > l.max {
			unit := "bytes"
			if l.repeated {
				unit = "values"
			}
			return status.Errorf(codes.InvalidArgument, "%s: %s has %d %s; at most %d are accepted in one request (split the request)", method, l.name, c, unit, l.max)
		}
	}
	return nil
}

func limitOf(limits []fieldLimit, num protowire.Number) *fieldLimit {
	for i := range limits {
		if limits[i].num == num {
			return &limits[i]
		}
	}
	return nil
}

// packedLen is the number of varints in a packed field's bytes: the bytes
// that end one (high bit clear).
func packedLen(v []byte) int {
	n := 0
	for _, c := range v {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// rawRequest is what the service's codec decodes a request into: its
// bytes, which checkRaw sees before the protobuf decoder does.
type rawRequest []byte

// serviceCodec is the protobuf codec, except that a rawRequest takes the
// message's bytes as they are.
type serviceCodec struct{ encoding.CodecV2 }

func newServiceCodec() serviceCodec {
	return serviceCodec{encoding.GetCodecV2(gproto.Name)}
}

func (c serviceCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawRequest); ok {
		*r = data.Materialize()
		return nil
	}
	return c.CodecV2.Unmarshal(data, v)
}

// limitListener accepts at most max connections at once and closes the
// others as they come.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, slots: l.slots}, nil
		default:
			c.Close() // over MaxServiceConnections
		}
	}
}

type limitConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

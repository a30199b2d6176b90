package topology

import (
	"unsafe"

	"github.com/onceflow/onceflow/internal/graph"
)

// Header and graph.Header have the same fields, in the same order, of the
// same types: this conversion compiles only while that holds, and it is
// what makes the slice conversions below sound.
var _ = graph.Header(Header{})

// headersOf views the runtime's headers as a topology's, without copying.
func headersOf(hs []graph.Header) Headers {
	return unsafe.Slice((*Header)(unsafe.Pointer(unsafe.SliceData(hs))), len(hs))
}

// graph views h as the runtime's headers, without copying.
func (h Headers) graph() []graph.Header {
	return unsafe.Slice((*graph.Header)(unsafe.Pointer(unsafe.SliceData(h))), len(h))
}

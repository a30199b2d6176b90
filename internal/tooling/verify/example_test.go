package verify_test

import (
	"fmt"

	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

func ExampleMatch() {
	in := []verify.Record{
		{Topic: "events", Partition: 0, Offset: 0, Value: []byte("a")},
		{Topic: "events", Partition: 0, Offset: 1, Value: []byte("b")},
		{Topic: "events", Partition: 1, Offset: 0, Value: []byte("c")},
	}
	lineage := func(src, value string) verify.Record {
		return verify.Record{Topic: "copy", Value: []byte(value), Headers: map[string]string{wire.HeaderSource: src}}
	}
	out := []verify.Record{
		lineage("events/0/0", "a"),
		lineage("events/0/0", "a"), // a duplicate
		lineage("events/1/0", "c"),
		lineage("events/1/0", "C"), // a changed value
		// events/0/1 has no output: missing
	}
	fmt.Println(verify.Match("events", in, out))
	// Output: input 3, output 4, missing 1, duplicates 1, unexpected 1: FAILED
}

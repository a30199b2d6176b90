package serde_test

import (
	"errors"
	"fmt"

	"github.com/onceflow/onceflow/serde"
)

func ExampleInt64() {
	c := serde.Int64()
	b, _ := c.Encode(-2)
	fmt.Printf("% x\n", b)

	v, _ := c.Decode([]byte{0, 0, 0, 0, 0, 0, 1, 0})
	fmt.Println(v)

	_, err := c.Decode([]byte{1, 2, 3, 4})
	fmt.Println(err)
	_, err = c.Decode(nil)
	fmt.Println(errors.Is(err, serde.ErrNull))
	// Output:
	// ff ff ff ff ff ff ff fe
	// 256
	// serde: int64 needs 8 bytes, got 4
	// true
}

func ExampleJSON() {
	type Order struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	}
	c := serde.JSON[Order]()
	b, _ := c.Encode(Order{ID: "o-1", Amount: 250})
	fmt.Println(string(b))

	o, _ := c.Decode([]byte(`{"id":"o-2","amount":7}`))
	fmt.Printf("%+v\n", o)

	_, err := c.Decode([]byte(`{"id":"o-3"} {"id":"o-4"}`))
	fmt.Println(err != nil)
	_, err = c.Decode(nil) // a tombstone
	fmt.Println(err)
	// Output:
	// {"id":"o-1","amount":250}
	// {ID:o-2 Amount:7}
	// true
	// serde: null value
}

// Records written by Java clients with Kafka's IntegerSerializer,
// ShortSerializer, DoubleSerializer, FloatSerializer and UUIDSerializer
// read back with Int32, Int16, Float64, Float32 and UUID.
func ExampleInt32() {
	b, _ := serde.Int32().Encode(-2)
	fmt.Printf("int32   % x\n", b)
	b, _ = serde.Int16().Encode(258)
	fmt.Printf("int16   % x\n", b)
	b, _ = serde.Float64().Encode(-2.5)
	fmt.Printf("float64 % x\n", b)
	b, _ = serde.Float32().Encode(1)
	fmt.Printf("float32 % x\n", b)

	n, _ := serde.Int32().Decode([]byte{0, 0, 1, 0})
	fmt.Println(n)
	_, err := serde.Int32().Decode([]byte{0, 0, 0, 0, 0, 0, 1, 0}) // a long
	fmt.Println(err)
	// Output:
	// int32   ff ff ff fe
	// int16   01 02
	// float64 c0 04 00 00 00 00 00 00
	// float32 3f 80 00 00
	// 256
	// serde: int32 needs 4 bytes, got 8
}

func ExampleUUID() {
	c := serde.UUID()
	id, _ := c.Decode([]byte("123E4567-E89B-12D3-A456-426614174000"))
	fmt.Printf("% x\n", id[:4])
	b, _ := c.Encode(id)
	fmt.Println(string(b))

	_, err := c.Decode([]byte("123e4567e89b12d3a456426614174000"))
	fmt.Println(err)
	// Output:
	// 12 3e 45 67
	// 123e4567-e89b-12d3-a456-426614174000
	// serde: uuid needs 36 bytes, got 32
}

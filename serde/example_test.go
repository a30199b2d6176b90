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

package httpsink_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/httpsink"
)

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("key:", r.Header.Get(httpsink.HeaderIdempotencyKey), "fence:", r.Header.Get(httpsink.HeaderFence))
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()

	sink, err := httpsink.New(httpsink.Config{URL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = sink.Deliver(context.Background(), sinks.Delivery{
		IdempotencyKey: "notify/ev-1",
		Payload:        []byte(`{"order":"o-1"}`),
		Attempt:        1,
		Fence:          sinks.Fence{Generation: 3, Partition: 0},
	})
	class, _ := sinks.Classify(err)
	fmt.Println("class:", class)
	// Output:
	// key: notify/ev-1 fence: 3/0
	// class: transient
}

package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/httpsink"
)

// TestReceiverCommand runs `onceflow receiver` with a secret, delivers one
// key twice through the HTTP sink, stops it and reads the final counters.
func TestReceiverCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"receiver", "--addr", "127.0.0.1:0", "--secret", "s"}, &out, &errb)
	}()
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(5 * time.Second)
	for listening.FindStringSubmatch(out.String()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no address printed; stdout %q stderr %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	url := listening.FindStringSubmatch(out.String())[1]
	sink, err := httpsink.New(httpsink.Config{URL: url + "/hook", Secret: []byte("s")})
	if err != nil {
		t.Fatal(err)
	}
	d := sinks.Delivery{IdempotencyKey: "k", Payload: []byte(`{}`), Attempt: 1}
	for range 2 {
		if err := sink.Deliver(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(url+"/hook", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned request: %d, want 401", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	if want := "1 effects, 1 distinct keys, 0 duplicate effects, 1 duplicate attempts"; !strings.Contains(out.String(), want) {
		t.Errorf("stdout %q does not say %q", out.String(), want)
	}
}

func TestReceiverCommandRejectsBadRates(t *testing.T) {
	code, _, stderr := cli(t, context.Background(), "receiver", "--addr", "127.0.0.1:0", "--drop-rate", "2", "--unavailable-rate", "0.9", "--throttle-rate", "0.2")
	if code != exitError || !strings.Contains(stderr, "drop rate 2") || !strings.Contains(stderr, "add up to") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming both problems", code, stderr)
	}
}

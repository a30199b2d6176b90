package receiver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/sinks/httpsink"
)

// BenchmarkHTTPSink measures deliveries per second of one HTTP sink to a
// receiver that takes 20 ms per request, with 1, 64 and 256 deliveries in
// flight (the runner's parallelism across keys). The ceiling is
// in-flight / 20 ms.
func BenchmarkHTTPSink(b *testing.B) {
	for _, inFlight := range []int{1, 64, 256} {
		b.Run(fmt.Sprintf("in-flight=%d", inFlight), func(b *testing.B) {
			r, err := New(Config{Delay: 20 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(r)
			defer srv.Close()
			s, err := httpsink.New(httpsink.Config{URL: srv.URL})
			if err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range inFlight {
				wg.Go(func() {
					for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
						d := delivery(fmt.Sprintf("k%d", n), fmt.Sprintf(`{"n":%d}`, n))
						if err := s.Deliver(context.Background(), d); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
			if st := r.Stats(); st.Effects != int64(b.N) {
				b.Errorf("%d effects for %d deliveries", st.Effects, b.N)
			}
		})
	}
}

package gen_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/gen"
)

func TestParseLines(t *testing.T) {
	recs, err := gen.ParseLines(strings.NewReader(`{"key":"k","value":"v","headers":{"b":"2","a":null},"partition":1,"timestamp":"2024-05-01T12:00:00.5Z"}

  {"key_b64":"/w==","value_json": [1, {"a" : true}],"timestamp":1000}
{}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3 (the blank line skipped)", len(recs))
	}
	r := recs[0]
	if string(r.Key) != "k" || string(r.Value) != "v" || r.Partition != 1 || !r.Timestamp.Equal(time.Date(2024, 5, 1, 12, 0, 0, 5e8, time.UTC)) {
		t.Errorf("record 1 = %+v", r)
	}
	if len(r.Headers) != 2 || r.Headers[0].Key != "b" || string(r.Headers[0].Value) != "2" || r.Headers[1].Key != "a" || r.Headers[1].Value != nil {
		t.Errorf("record 1 headers = %+v, want b=2 then a=null, in order", r.Headers)
	}
	r = recs[1]
	if !bytes.Equal(r.Key, []byte{0xff}) || string(r.Value) != `[1,{"a":true}]` || r.Partition != -1 || r.Timestamp.UnixMilli() != 1000 {
		t.Errorf("record 2 = %+v", r)
	}
	r = recs[2]
	if r.Key != nil || r.Value != nil || r.Headers != nil || !r.Timestamp.IsZero() || r.Partition != -1 {
		t.Errorf("record 3 = %+v, want a null key and value, no headers, no timestamp, no partition", r)
	}
}

func TestParseLinesErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"key":"k","valeu":"v"}`, `unknown field "valeu"`},
		{`{"key":"k","key_b64":"aw=="}`, "key is given in more than one form"},
		{`{"value_json":"x","value":"y"}`, "value is given in more than one form"},
		{`{"key_b64":"***"}`, "key_b64:"},
		{`{"headers":["a"]}`, "headers: want an object"},
		{`{"headers":{"a":1}}`, `header "a": want a text value or null`},
		{`{"timestamp":true}`, "timestamp true: want RFC 3339 text or integer milliseconds"},
		{`{"timestamp":"2024-05-01"}`, "timestamp:"},
		{`{"partition":-2}`, "partition -2 is negative"},
		{`{"value":"a"} {"value":"b"}`, "more than one JSON value"},
		{`[1]`, "cannot unmarshal array"},
	} {
		_, err := gen.ParseLines(strings.NewReader("{}\n" + tc.line + "\n"))
		if err == nil || !strings.Contains(err.Error(), "line 2: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want line 2 and %q", tc.line, err, tc.want)
		}
	}
	// Many bad lines: the first ten are named.
	_, err := gen.ParseLines(strings.NewReader(strings.Repeat("x\n", 25)))
	if err == nil || !strings.Contains(err.Error(), "line 10: ") || strings.Contains(err.Error(), "line 11: ") || !strings.Contains(err.Error(), "more lines not checked") {
		t.Errorf("25 bad lines: %v", err)
	}
}

// FuzzParseLines checks that ParseLines never panics and that what it
// accepts has a partition of -1 or more.
func FuzzParseLines(f *testing.F) {
	f.Add([]byte(`{"key":"k","value":"v","headers":{"a":"1","b":null},"partition":1,"timestamp":"2024-05-01T12:00:00Z"}`))
	f.Add([]byte(`{"key_b64":"/w==","value_json":{"a":[1,2]},"timestamp":1000}`))
	f.Add([]byte(`{"headers":{"a":{"b":1}}}`))
	f.Add([]byte("{}\n\n{\"value\":null}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := gen.ParseLines(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Partition < -1 {
				t.Fatalf("partition %d accepted from %q", r.Partition, b)
			}
		}
	})
}

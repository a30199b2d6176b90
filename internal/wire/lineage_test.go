package wire

import "testing"

func TestParseSource(t *testing.T) {
	for _, tc := range []struct {
		in    string
		topic string
		p     int32
		o     int64
		ok    bool
	}{
		{"events/3/1207", "events", 3, 1207, true},
		{"a.b-c_d/0/0", "a.b-c_d", 0, 0, true},
		{"events/3/", "", 0, 0, false},
		{"events//1", "", 0, 0, false},
		{"/3/1", "", 0, 0, false},
		{"events/2147483648/1", "", 0, 0, false},
		{"events/3/1 ", "", 0, 0, false},
		{"", "", 0, 0, false},
	} {
		topic, p, o, ok := ParseSource(tc.in)
		if ok != tc.ok || topic != tc.topic || p != tc.p || o != tc.o {
			t.Errorf("ParseSource(%q) = %q %d %d %v, want %q %d %d %v", tc.in, topic, p, o, ok, tc.topic, tc.p, tc.o, tc.ok)
		}
	}
}

func FuzzParseSource(f *testing.F) {
	for _, s := range []string{"events/3/1207", "a/b/c/1/2", "//", "x/-1/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		topic, p, o, ok := ParseSource(s)
		if !ok {
			return
		}
		if topic == "" || p < 0 || o < 0 {
			t.Fatalf("ParseSource(%q) accepted %q %d %d", s, topic, p, o)
		}
		t2, p2, o2, ok2 := ParseSource(Source(topic, p, o))
		if !ok2 || t2 != topic || p2 != p || o2 != o {
			t.Fatalf("round trip of %q failed", s)
		}
	})
}

func TestPunctuatorSource(t *testing.T) {
	if got, want := PunctuatorSource("totals", 1, 7), "punctuator/totals/1_7"; got != want {
		t.Errorf("PunctuatorSource = %q, want %q", got, want)
	}
	if got, want := string(AppendSource([]byte("x:"), "in", 2, 30)), "x:in/2/30"; got != want {
		t.Errorf("AppendSource = %q, want %q", got, want)
	}
}

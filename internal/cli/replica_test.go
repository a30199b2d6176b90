package cli

import "testing"

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		"9100":           "127.0.0.1:9100",
		":9100":          "127.0.0.1:9100",
		":0":             "127.0.0.1:0",
		"127.0.0.1:9100": "127.0.0.1:9100",
		"0.0.0.0:9100":   "0.0.0.0:9100",
		"[::]:9100":      "[::]:9100",
		"[::1]:9100":     "[::1]:9100",
		"host:9100":      "host:9100",
	} {
		if got := ListenAddr(in); got != want {
			t.Errorf("ListenAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

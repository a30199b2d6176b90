package scenario

import (
	"context"
	"strings"
	"testing"
)

// A configuration's problems come back at once, before anything starts.
func TestConfigProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"unknown", Config{Records: 10}, []string{`unknown scenario "unknown"`}},
		{"orders", Config{Records: 1, Kills: -1, Executable: "x"}, []string{"at least 2 records and kills >= 0, got 1 and -1"}},
		{"sinks", Config{Records: 10, Executable: "x", BadRequestRate: 2}, []string{"needs a PostgreSQL DSN", "bad-request rate 2"}},
		{"cli", Config{Records: 10, Executable: "x", Guarantees: []string{"exactly_once", "twice"}}, []string{`guarantee "twice"`}},
	} {
		err := Run(context.Background(), tc.name, tc.cfg)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want it to say %q", tc.name, err, w)
			}
		}
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u@h:5432/onceflow?sslmode=disable", "postgres://u@h:5432/sinks_1?sslmode=disable"},
		{"host=h user=u dbname=onceflow", "host=h user=u dbname=onceflow dbname=sinks_1"},
	} {
		if got := withDatabase(tc.dsn, "sinks_1"); got != tc.want {
			t.Errorf("withDatabase(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}

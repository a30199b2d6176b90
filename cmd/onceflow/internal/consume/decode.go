package consume

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/serde"
)

// Formats are the codec names Decode knows, as the flags take them.
var Formats = []string{"string", "bytes", "json", "int64", "int32", "int16", "float64", "float32", "uuid"}

// CheckFormat returns an error naming the formats when f is not one.
func CheckFormat(f string) error {
	if !slices.Contains(Formats, f) {
		return fmt.Errorf("consume: unknown format %q: one of %s", f, strings.Join(Formats, ", "))
	}
	return nil
}

// decode turns b into a JSON value by format f: a string, base64 text
// (bytes), the JSON document itself, a number, or a UUID's text. A nil b
// (a null key or a tombstone) is null.
func decode(f string, b []byte) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	var v any
	var err error
	switch f {
	case "string":
		v, err = serde.String().Decode(b)
	case "bytes":
		v = base64.StdEncoding.EncodeToString(b)
	case "json":
		if !json.Valid(b) {
			return nil, errors.New("not a JSON document")
		}
		return json.RawMessage(b), nil
	case "int64":
		v, err = serde.Int64().Decode(b)
	case "int32":
		v, err = serde.Int32().Decode(b)
	case "int16":
		v, err = serde.Int16().Decode(b)
	case "float64":
		v, err = serde.Float64().Decode(b)
	case "float32":
		v, err = serde.Float32().Decode(b)
	case "uuid":
		var u [16]byte
		if u, err = serde.UUID().Decode(b); err == nil {
			v = fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
		}
	default:
		return nil, CheckFormat(f)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

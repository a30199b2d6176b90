package serde

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// escapedReplacement is what encoding/json writes in place of each invalid
// byte of a string: U+FFFD, escaped (a genuine U+FFFD it writes as is).
var escapedReplacement = []byte(`\ufffd`)

// validPrefix returns the length of b's longest valid UTF-8 prefix: the
// offset of its first invalid byte.
func validPrefix(b []byte) int {
	n := 0
	for n < len(b) {
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size <= 1 {
			return n
		}
		n += size
	}
	return n
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// maxDepth bounds the walk of invalidUTF8; encoding/json refuses deeper
// cycles before it is reached.
const maxDepth = 1000

// invalidUTF8 reports whether v holds, where encoding/json would write it,
// a string (value or map key) that is not valid UTF-8, and a path to it.
// Values with their own MarshalJSON or MarshalText are theirs to check.
func invalidUTF8(v reflect.Value, path string, depth int) (string, bool) {
	if !v.IsValid() || depth > maxDepth {
		return "", false
	}
	if v.Type().Implements(jsonMarshaler) || v.Type().Implements(textMarshaler) {
		return "", false
	}
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return orRoot(path), true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidUTF8(v.Elem(), path, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false // []byte is base64
		}
		for i := range v.Len() {
			if p, bad := invalidUTF8(v.Index(i), path+"["+strconv.Itoa(i)+"]", depth+1); bad {
				return p, true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			k := it.Key()
			if k.Kind() == reflect.String && !utf8.ValidString(k.String()) {
				return orRoot(path) + " (a key)", true
			}
			if p, bad := invalidUTF8(it.Value(), path+"["+strconv.Quote(k.String())+"]", depth+1); bad {
				return p, true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() && !f.Anonymous || tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if name == "" {
				name = f.Name
			}
			if p, bad := invalidUTF8(v.Field(i), path+"."+name, depth+1); bad {
				return p, true
			}
		}
	}
	return "", false
}

func orRoot(path string) string {
	if path == "" {
		return "value"
	}
	return "value" + path
}

package serde

import (
	"bytes"
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

// loneSurrogate returns the offset of the first \u escape in the JSON
// text b that names half of a UTF-16 surrogate pair without the other
// half (encoding/json decodes it to U+FFFD), or -1 when there is none.
// Escapes are looked for inside strings only; b need not be valid JSON.
func loneSurrogate(b []byte) int {
	if !bytes.Contains(b, []byte(`\u`)) {
		return -1
	}
	in := false
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"':
			in = !in
		case in && b[i] == '\\' && i+1 < len(b):
			if b[i+1] != 'u' {
				i++ // a one-character escape
				continue
			}
			r, ok := hex4(b, i+2)
			switch {
			case !ok || r < 0xd800 || r > 0xdfff:
				i++
			case r >= 0xdc00:
				return i // a low half first
			default:
				if len(b) < i+12 || b[i+6] != '\\' || b[i+7] != 'u' {
					return i
				}
				if lo, ok := hex4(b, i+8); !ok || lo < 0xdc00 || lo > 0xdfff {
					return i
				}
				i += 11
			}
		}
	}
	return -1
}

// hex4 reads four hex digits of b at i.
func hex4(b []byte, i int) (rune, bool) {
	if len(b) < i+4 {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		d, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

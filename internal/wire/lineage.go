package wire

// The lineage: the value of HeaderSource, written by the runtime and the
// topology test driver, read by the verifier.

import (
	"strconv"
	"strings"
)

// PunctuatorPrefix begins the lineage of a record a punctuation wrote.
const PunctuatorPrefix = "punctuator/"

// Source is the lineage of a consumed record, "topic/partition/offset".
func Source(topic string, partition int32, offset int64) string {
	var buf [96]byte // most lineages fit: one allocation, the string's
	return string(AppendSource(buf[:0], topic, partition, offset))
}

// AppendSource appends Source(topic, partition, offset) to b.
func AppendSource(b []byte, topic string, partition int32, offset int64) []byte {
	b = append(b, topic...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, '/')
	return strconv.AppendInt(b, offset, 10)
}

// PunctuatorSource is the lineage of a record a punctuation of stage wrote
// on the task of sub-topology sub and partition:
// "punctuator/<stage>/<sub>_<partition>".
func PunctuatorSource(stage string, sub int, partition int32) string {
	return PunctuatorPrefix + stage + "/" + strconv.Itoa(sub) + "_" + strconv.Itoa(int(partition))
}

// ParseSource parses a consumed record's lineage (topic/partition/offset).
// The partition and offset must be non-negative decimals; the topic must
// be non-empty.
func ParseSource(s string) (topic string, partition int32, offset int64, ok bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "", 0, 0, false
	}
	j := strings.LastIndexByte(s[:i], '/')
	if j <= 0 {
		return "", 0, 0, false
	}
	p, err := strconv.ParseInt(s[j+1:i], 10, 32)
	if err != nil || p < 0 || strings.HasPrefix(s[j+1:i], "+") {
		return "", 0, 0, false
	}
	o, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || o < 0 || strings.HasPrefix(s[i+1:], "+") {
		return "", 0, 0, false
	}
	return s[:j], int32(p), o, true
}

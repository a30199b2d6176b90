package kafka

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Retriable reports whether err is one the cluster may clear by itself: a
// Kafka error code Kafka marks retriable, a connection or network error, a
// timeout, or fencing (another producer took over). A record-specific or
// client-side error (MESSAGE_TOO_LARGE, INVALID_RECORD, a sarama
// configuration error) is not.
func Retriable(err error) bool {
	if err == nil {
		return false
	}
	if IsFenced(err) {
		return true
	}
	var ke sarama.KError
	if errors.As(err, &ke) {
		if e, ok := kerr.ErrorForCode(int16(ke)).(*kerr.Error); ok {
			return e.Retriable
		}
		return false
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, sarama.ErrOutOfBrokers), errors.Is(err, sarama.ErrNotConnected), errors.Is(err, sarama.ErrClosedClient),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}

package kafka

import (
	"errors"
	"fmt"

	"github.com/IBM/sarama"
)

// ErrProducerFenced means the broker fenced the transactional producer: a
// newer producer with the same transactional id initialised after it, or
// the coordinator aborted its transaction (timeout, or a broker restart)
// and bumped the producer's epoch. Kafka answers PRODUCER_FENCED (error
// code 90; sarama v1 names the code but prints it as "Unknown error, how
// did this happen? Error code = 90") or, to older requests,
// INVALID_PRODUCER_EPOCH (47). Not retryable with the same producer:
// close it and create it again with the same transactional id, which
// aborts whatever transaction it left open.
var ErrProducerFenced = errors.New("kafka: producer fenced")

// fencedError names a fencing error code and keeps sarama's error as its
// cause, so errors.Is matches both ErrProducerFenced and the sarama code.
type fencedError struct {
	code  sarama.KError
	cause error
}

func (e *fencedError) Error() string {
	name := "PRODUCER_FENCED"
	if e.code == sarama.ErrInvalidProducerEpoch {
		name = "INVALID_PRODUCER_EPOCH"
	}
	return fmt.Sprintf("%v (%s, Kafka error code %d): a newer producer with the same transactional id took over, "+
		"or the broker aborted the transaction; the producer must be created again", ErrProducerFenced, name, int16(e.code))
}

func (e *fencedError) Is(target error) bool { return target == ErrProducerFenced }

func (e *fencedError) Unwrap() error { return e.cause }

// named returns err with the Kafka error codes that mean "fenced" turned
// into an error that names them and matches ErrProducerFenced; any other
// error (and nil) comes back unchanged.
func named(err error) error {
	var code sarama.KError
	if !errors.As(err, &code) || errors.Is(err, ErrProducerFenced) {
		return err
	}
	if code == sarama.ErrProducerFenced || code == sarama.ErrInvalidProducerEpoch {
		return &fencedError{code: code, cause: err}
	}
	return err
}

// IsFenced reports whether err says the producer was fenced (see
// ErrProducerFenced), whether or not it went through named.
func IsFenced(err error) bool {
	return errors.Is(err, ErrProducerFenced) ||
		errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch)
}

// ErrRefused means the cluster refused this client what retrying with the
// same settings cannot get: authentication (a wrong user, password or
// mechanism; a certificate refused on either side) or authorization (an
// ACL missing). Not retryable: the replica stops with it.
var ErrRefused = errors.New("kafka: refused by the cluster (check the TLS and SASL settings and the ACLs, see docs/security.md)")

// authErrors are the Kafka error codes of a refusal.
var authErrors = []sarama.KError{
	sarama.ErrSASLAuthenticationFailed, sarama.ErrUnsupportedSASLMechanism, sarama.ErrIllegalSASLState,
	sarama.ErrTopicAuthorizationFailed, sarama.ErrGroupAuthorizationFailed, sarama.ErrClusterAuthorizationFailed,
	sarama.ErrTransactionalIDAuthorizationFailed,
}

// IsRefused reports whether err is a refusal (see ErrRefused): one of
// sarama's or franz-go's authentication or authorization error codes, or a
// TLS certificate error.
func IsRefused(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrRefused) || isAuthError(err) {
		return true
	}
	for _, code := range authErrors {
		if errors.Is(err, code) {
			return true
		}
	}
	return false
}

// Refused wraps err, a refusal, so that errors.Is matches ErrRefused and
// the message says what was refused and what to check.
func Refused(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrRefused, what, err)
}

// IsRebalancing reports whether err is the coordinator's answer that the
// group is rebalancing (REBALANCE_IN_PROGRESS): routine, the member joins
// the next generation.
func IsRebalancing(err error) bool { return errors.Is(err, sarama.ErrRebalanceInProgress) }

// IsMembershipLost reports whether the group coordinator answered that
// this member no longer holds its generation: it was evicted or replaced
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION), another replica took its
// instance id (FENCED_INSTANCE_ID), or the group is rebalancing
// (REBALANCE_IN_PROGRESS, after which the eager protocol revokes every
// partition). A member that gets one must stop acting for its partitions.
func IsMembershipLost(err error) bool {
	return errors.Is(err, sarama.ErrUnknownMemberId) || errors.Is(err, sarama.ErrIllegalGeneration) ||
		errors.Is(err, sarama.ErrFencedInstancedId) || errors.Is(err, sarama.ErrRebalanceInProgress)
}

// coordinatorMoved reports whether a group coordinator's answer says the
// group is coordinated elsewhere now (or not yet anywhere): the client's
// cached coordinator is stale and must be looked up again.
func coordinatorMoved(err sarama.KError) bool {
	return err == sarama.ErrNotCoordinatorForConsumer || err == sarama.ErrConsumerCoordinatorNotAvailable
}

// ErrTxnNotReady is sarama's refusal to send a record while its
// transaction is not open (aborting after a failure elsewhere, or a
// partition the coordinator did not add): the transaction's state, never
// the record's doing.
var ErrTxnNotReady = sarama.ErrTransactionNotReady

// IsTxnNotReady reports whether err is ErrTxnNotReady.
func IsTxnNotReady(err error) bool {
	return errors.Is(err, ErrTxnNotReady)
}

package statestore

import "errors"

// Sentinel errors. Callers branch on them with errors.Is; most are returned
// wrapped with detail. None of them is retryable by calling again with the same
// arguments: each names a caller bug (invalid input, a finished Txn), a closed
// DB, or data that cannot be decoded.
var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("statestore: closed")

	// ErrTxnDone is returned by a Txn after Apply or Discard. Begin a new one.
	ErrTxnDone = errors.New("statestore: transaction already applied or discarded")

	// ErrInvalidStore is returned for an empty store name or one longer than
	// MaxStoreNameLen bytes.
	ErrInvalidStore = errors.New("statestore: invalid store name")

	// ErrInvalidTask is returned for a Task with a negative sub-topology or
	// partition, or a sub-topology that does not fit in 32 bits.
	ErrInvalidTask = errors.New("statestore: invalid task")

	// ErrInvalidOffset is returned for a negative changelog offset.
	ErrInvalidOffset = errors.New("statestore: invalid changelog offset")

	// ErrMissingOffset is returned by Txn.Apply when the transaction changed a
	// (store, task) but the offsets map has no changelog offset for it: the
	// local state would run ahead of its recorded offset.
	ErrMissingOffset = errors.New("statestore: changed store task has no changelog offset")

	// ErrNotDedupStore is returned by the dedup helpers for a store that is not
	// listed in Options.DedupStores.
	ErrNotDedupStore = errors.New("statestore: not a dedup store")

	// ErrCorrupt is returned (wrapped, with detail) by the decoders and by any
	// read or restore that meets bytes it cannot decode. Not retryable: the
	// input is wrong.
	ErrCorrupt = errors.New("statestore: corrupt data")

	// ErrIncompatible is returned by Open for a database written in a layout
	// this version does not understand.
	ErrIncompatible = errors.New("statestore: incompatible on-disk format")

	// ErrInvalidOptions is wrapped by every problem Options.Validate reports.
	ErrInvalidOptions = errors.New("statestore: invalid options")
)

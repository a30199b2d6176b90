package sinkrunner

// FailLedgerWrites makes every ledger write batch that holds an entry f
// returns an error for fail, before anything is sent. Set before Run.
func (r *Runner) FailLedgerWrites(f func(key string, e Entry) error) { r.ledgerFault = f }

package scenario

// checks collects a scenario's checks: each prints "ok: what" or
// "FAILED: what".
type checks struct {
	r      *run
	failed int
}

func (c *checks) check(what string, ok bool) {
	if ok {
		c.r.printf("ok: %s", what)
		return
	}
	c.r.printf("FAILED: %s", what)
	c.failed++
}

// err is ErrCheckFailed when a check failed.
func (c *checks) err() error {
	if c.failed > 0 {
		return ErrCheckFailed
	}
	return nil
}

package topology

// Session and sliding windows: windows the records define.

import (
	"fmt"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
)

// msTime turns milliseconds since the epoch into a time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// session adds the record to its key's session: the open sessions within
// gap of it merge with it into one.
func (s *windowed[K, V, A]) session(c *graph.Context, st graph.State, rec in[K, V], now int64) error {
	gap := s.w.size.Milliseconds()
	closeBefore := now - s.w.grace.Milliseconds() - gap - 1 // a session ending at or before it is closed
	type found struct {
		dk         []byte
		start, end int64
		agg        []byte
	}
	var merged []found
	start, end := rec.ts, rec.ts
	p := keyPrefix(prefixWindow, rec.kb)
	var perr error
	err := st.Range(s.store, p, prefixEnd(p), func(k, v []byte) bool {
		_, ws, we, err := parseWindowKey(k)
		if err != nil {
			perr = err
			return false
		}
		if we >= rec.ts-gap && ws <= rec.ts+gap && we > closeBefore {
			merged = append(merged, found{dk: append([]byte(nil), k...), start: ws, end: we, agg: append([]byte(nil), v...)})
			start, end = min(start, ws), max(end, we)
		}
		return true
	})
	if err != nil {
		return err
	}
	if perr != nil {
		return fmt.Errorf("window store %q: %w", s.store, perr)
	}
	if end <= closeBefore {
		return s.late(rec, now)
	}
	var agg A
	for i, f := range merged {
		a, err := s.decode(f.agg)
		if err != nil {
			return err
		}
		if i == 0 {
			agg = a
		} else if agg, err = s.merge(rec.k, agg, a); err != nil {
			return err
		}
		if err := st.Delete(s.store, indexKey(prefixClose, s.closeAt(f.end), f.dk)); err != nil {
			return err
		}
		if err := st.Delete(s.store, f.dk); err != nil {
			return err
		}
	}
	if len(merged) == 0 {
		agg, err = s.first(rec.k, rec.v)
	} else {
		agg, err = s.add(rec.k, rec.v, agg)
	}
	if err != nil {
		return err
	}
	return s.put(c, st, rec, windowKey(rec.kb, start, end), true, start, end, agg)
}

// sliding adds the record to the sliding windows (KIP-450) it falls in,
// creating the windows it defines, and recomputes each of them from the
// key's records, kept for as long as a record on time may need them.
func (s *windowed[K, V, A]) sliding(c *graph.Context, st graph.State, rec in[K, V], now int64) error {
	diff := s.w.size.Milliseconds()
	grace := s.w.grace.Milliseconds()
	closeBefore := now - grace - 1  // a window ending at or before it is closed
	if rec.ts+diff <= closeBefore { // the latest window it can be in ends at ts + diff
		return s.late(rec, now)
	}
	vb, err := s.vc.Encode(rec.v)
	if err != nil {
		return fmt.Errorf("value: %w", err)
	}
	rk := rawKey(rec.kb, rec.ts)
	prev, seen, err := st.Get(s.store, rk)
	if err != nil {
		return err
	}
	if err := st.Put(s.store, rk, appendValue(prev, vb)); err != nil {
		return err
	}
	if !seen {
		// A record at ts is needed while a record on time may still define
		// or join a window reaching it.
		if err := st.Put(s.store, indexKey(prefixExpire, rec.ts+2*diff+2+grace, rk), nil); err != nil {
			return err
		}
	}
	var rs []timed
	var perr error
	err = st.Range(s.store, rawKey(rec.kb, rec.ts-diff-1), rawKey(rec.kb, rec.ts+diff+2), func(k, v []byte) bool {
		ts, err := parseRawTime(k)
		if err != nil {
			perr = err
			return false
		}
		vs, err := splitValues(v)
		if err != nil {
			perr = err
			return false
		}
		for i := range vs {
			vs[i] = append([]byte(nil), vs[i]...)
		}
		rs = append(rs, timed{ts, vs})
		return true
	})
	if err != nil {
		return err
	}
	if perr != nil {
		return fmt.Errorf("window store %q: %w", s.store, perr)
	}
	// The windows the record is in: the window ending at each record in
	// [ts, ts+diff], and the window starting after each record in
	// [ts-diff-1, ts-1]. And the window starting after the record itself,
	// when a record follows within diff + 1.
	var starts []int64
	for _, r := range rs {
		switch {
		case r.ts >= rec.ts && r.ts <= rec.ts+diff:
			starts = append(starts, r.ts-diff)
		case r.ts < rec.ts:
			starts = append(starts, r.ts+1)
		}
	}
	right := slices.ContainsFunc(rs, func(r timed) bool { return r.ts > rec.ts && r.ts <= rec.ts+diff+1 })
	slices.Sort(starts)
	starts = slices.Compact(starts)
	for _, start := range starts {
		if start+diff <= closeBefore {
			continue
		}
		if err := s.recompute(c, st, rec, rs, start, start+diff); err != nil {
			return err
		}
	}
	if right {
		start := rec.ts + 1
		dk := windowKey(rec.kb, start, start+diff)
		if _, ok, err := st.Get(s.store, dk); err != nil || ok {
			return err
		}
		return s.recompute(c, st, rec, rs, start, start+diff)
	}
	return nil
}

// timed is a key's records at one timestamp, as stored.
type timed struct {
	ts int64
	vs [][]byte
}

// recompute folds the records in [start, end] into a window's aggregate,
// in timestamp order, and stores and forwards it. A window the record
// does not belong to (the one starting after it) is created only.
func (s *windowed[K, V, A]) recompute(c *graph.Context, st graph.State, rec in[K, V], rs []timed, start, end int64) error {
	var agg A
	n := 0
	for _, r := range rs {
		if r.ts < start || r.ts > end {
			continue
		}
		for _, vb := range r.vs {
			v, err := s.vc.Decode(vb)
			if err != nil {
				return fmt.Errorf("window store %q: stored value: %w", s.store, err)
			}
			if n == 0 {
				agg, err = s.first(rec.k, v)
			} else {
				agg, err = s.add(rec.k, v, agg)
			}
			if err != nil {
				return err
			}
			n++
		}
	}
	if n == 0 {
		return nil // windows are never empty
	}
	dk := windowKey(rec.kb, start, end)
	_, ok, err := st.Get(s.store, dk)
	if err != nil {
		return err
	}
	return s.put(c, st, rec, dk, !ok, start, end, agg)
}

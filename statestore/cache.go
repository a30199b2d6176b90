package statestore

import (
	"iter"
	"sync"
)

// defaultReadCacheEntries is the default of Options.ReadCacheEntries.
const defaultReadCacheEntries = 1 << 16

// readCache holds committed values (and deletions) of data keys, so a
// Txn reads a hot key from memory instead of seeking Pebble's memtables and
// tables. It is a two-generation map: lookups promote from the old
// generation to the new one, and when the new one fills, the old one is
// dropped. That keeps the recently used keys at a fixed bound without
// per-entry bookkeeping.
//
// It only ever holds committed state. Every write path (Txn.Apply, Restore,
// Wipe) updates or drops entries under the lock and bumps epoch; a reader
// that missed takes the epoch before reading Pebble and fills the entry only
// if no write happened meanwhile, so a fill can never put back a value older
// than a write it raced with.
type readCache struct {
	mu    sync.Mutex
	limit int
	cur   map[string]cachedValue
	old   map[string]cachedValue
	epoch uint64
}

type cachedValue struct {
	v  []byte // owned by the cache; never modified
	ok bool   // false: the key has no value
}

func newReadCache(limit int) *readCache {
	if limit <= 0 {
		return nil
	}
	return &readCache{limit: limit, cur: make(map[string]cachedValue, limit)}
}

// get returns the cached value of key (not a copy: the caller clones) and
// whether there was an entry; when there was none, epoch is what fill needs.
func (c *readCache) get(key []byte) (v cachedValue, hit bool, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, hit = c.cur[string(key)]; hit {
		return v, true, 0
	}
	if v, hit = c.old[string(key)]; hit {
		c.setLocked(string(key), v)
		return v, true, 0
	}
	return cachedValue{}, false, c.epoch
}

// fill records what a reader found in Pebble, unless a write happened since
// it took epoch.
func (c *readCache) fill(key []byte, v []byte, ok bool, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	c.setLocked(string(key), cachedValue{v: v, ok: ok})
}

// setLocked puts key in the new generation. An entry of key in the old
// generation may stay: lookups take the new generation first, and the old
// one is only ever dropped, never promoted whole. So a write needs no
// delete from the old generation, a lookup that would miss in a big map.
func (c *readCache) setLocked(key string, v cachedValue) {
	if len(c.cur) >= c.limit {
		if _, ok := c.cur[key]; !ok {
			c.old = c.cur
			c.cur = make(map[string]cachedValue, c.limit)
		}
	}
	c.cur[key] = v
}

// update records the values a write just committed to Pebble (ok false:
// deleted); the values must not be modified later.
func (c *readCache) update(entries iter.Seq2[string, cachedValue]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for k, v := range entries {
		c.setLocked(k, v)
	}
}

// forget drops the entries of keys a write just changed in Pebble.
func (c *readCache) forget(keys iter.Seq[[]byte]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for k := range keys {
		delete(c.cur, string(k))
		delete(c.old, string(k))
	}
}

// clear drops every entry.
func (c *readCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.cur = make(map[string]cachedValue, c.limit)
	c.old = nil
}

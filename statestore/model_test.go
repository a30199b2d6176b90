package statestore

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestTxnAgreesWithAModel drives random transactions (plain and dedup
// writes, through the Txn and through a Scope, Range, ExpireDedup and
// LatestDedup, applied or discarded) with restores and wipes in between,
// and compares every read, and the committed state with its expiry index
// after each transaction, with a map: a Txn stages each write once, reads
// dedup keys through an iterator it keeps, and builds Apply's batch from
// its map and its index batch, and none of that may show or keep
// anything the plain model does not.
func TestTxnAgreesWithAModel(t *testing.T) {
	for _, cache := range []int{-1, 0, 4} {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("cache%d/seed%d", cache, seed), func(t *testing.T) {
				runModel(t, cache, seed)
			})
		}
	}
}

// modelState is the committed state the model keeps: plain values by
// task and key, dedup first-seen milliseconds by task and id.
type modelState struct {
	plain map[Task]map[string]string
	dedup map[Task]map[string]int64
}

func (m modelState) clone() modelState {
	c := modelState{plain: map[Task]map[string]string{}, dedup: map[Task]map[string]int64{}}
	for k, v := range m.plain {
		c.plain[k] = maps.Clone(v)
	}
	for k, v := range m.dedup {
		c.dedup[k] = maps.Clone(v)
	}
	return c
}

func runModel(t *testing.T, cache int, seed uint64) {
	db := openT(t, "", Options{DedupStores: []string{"ids"}, ReadCacheEntries: cache})
	rng := rand.New(rand.NewPCG(seed, 21))
	tasks := []Task{task0, task1}
	model := modelState{plain: map[Task]map[string]string{}, dedup: map[Task]map[string]int64{}}
	for _, tk := range tasks {
		model.plain[tk], model.dedup[tk] = map[string]string{}, map[string]int64{}
	}
	base := int64(1_700_000_000_000)
	entry := func(ms int64) DedupEntry {
		return DedupEntry{FirstSeen: time.UnixMilli(ms), Source: "in/0/" + strconv.FormatInt(ms, 10), PayloadHash: [32]byte{byte(ms)}}
	}
	key := func() string { return "k" + strconv.Itoa(rng.IntN(12)) }
	offset := int64(0)
	var scope Scope
	for round := range 60 {
		// Between transactions: sometimes a restore or a wipe of one task.
		switch rng.IntN(8) {
		case 0:
			tk := tasks[rng.IntN(2)]
			var recs []Change
			for range 1 + rng.IntN(4) {
				k := key()
				if rng.IntN(3) == 0 {
					recs = append(recs, Change{Key: []byte(k), Tombstone: true})
					delete(model.dedup[tk], k)
					continue
				}
				ms := base + int64(rng.IntN(20))
				recs = append(recs, Change{Key: []byte(k), Value: EncodeDedup(entry(ms))})
				model.dedup[tk][k] = ms
			}
			offset++
			if err := db.Restore("ids", tk, recs, offset); err != nil {
				t.Fatalf("round %d: restore: %v", round, err)
			}
		case 1:
			tk := tasks[rng.IntN(2)]
			if err := db.Wipe("ids", tk); err != nil {
				t.Fatalf("round %d: wipe: %v", round, err)
			}
			model.dedup[tk] = map[string]int64{}
		}

		view := model.clone()
		tx := db.Begin()
		for op := range 1 + rng.IntN(25) {
			tk := tasks[rng.IntN(2)]
			k := key()
			where := fmt.Sprintf("round %d op %d %s %s", round, op, tk, k)
			switch rng.IntN(9) {
			case 0:
				v := strconv.Itoa(rng.IntN(1000))
				mustPut(t, tx, "s", tk, k, v)
				view.plain[tk][k] = v
			case 1:
				if err := tx.Delete("s", tk, []byte(k)); err != nil {
					t.Fatal(err)
				}
				delete(view.plain[tk], k)
			case 2:
				v, ok, err := tx.Get("s", tk, []byte(k))
				want, wantOK := view.plain[tk][k]
				if err != nil || ok != wantOK || string(v) != want {
					t.Fatalf("%s: Get = %q %v %v, want %q %v", where, v, ok, err, want, wantOK)
				}
			case 3:
				ms := base + int64(rng.IntN(20))
				if err := tx.PutDedup("ids", tk, []byte(k), entry(ms)); err != nil {
					t.Fatal(err)
				}
				view.dedup[tk][k] = ms
			case 4:
				if err := tx.Delete("ids", tk, []byte(k)); err != nil {
					t.Fatal(err)
				}
				delete(view.dedup[tk], k)
			case 5, 6:
				// A record through a Scope: look the id up, write it when
				// absent (the fresh path) or move it, maybe roll back.
				scope.Reset(tx, tk)
				e, ok, err := scope.GetDedup("ids", []byte(k))
				want, wantOK := view.dedup[tk][k]
				if err != nil || ok != wantOK || (ok && e.FirstSeen.UnixMilli() != want) {
					t.Fatalf("%s: Scope.GetDedup = %v %v %v, want %d %v", where, e.FirstSeen.UnixMilli(), ok, err, want, wantOK)
				}
				mark := scope.Mark()
				ms := base + int64(rng.IntN(20))
				if err := scope.PutDedup("ids", []byte(k), entry(ms)); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(4) == 0 {
					scope.Rollback(mark)
				} else {
					view.dedup[tk][k] = ms
				}
				if rng.IntN(3) == 0 {
					ms2 := base + int64(rng.IntN(20))
					if err := scope.PutDedup("ids", []byte(k), entry(ms2)); err != nil {
						t.Fatal(err)
					}
					view.dedup[tk][k] = ms2
				}
				if err := scope.Commit(); err != nil {
					t.Fatal(err)
				}
			case 7:
				got := txnRange(t, tx, "s", tk, nil, nil)
				var want []kv
				for _, k := range slices.Sorted(maps.Keys(view.plain[tk])) {
					want = append(want, kv{k, view.plain[tk][k]})
				}
				if !equalKVs(got, want) {
					t.Fatalf("%s: Range = %v, want %v", where, got, want)
				}
			case 8:
				if rng.IntN(2) == 0 {
					checkLatest(t, where, tx, tk, view.dedup[tk])
					continue
				}
				before := base + int64(rng.IntN(22))
				expired, err := tx.ExpireDedup("ids", tk, time.UnixMilli(before), 0)
				if err != nil {
					t.Fatal(err)
				}
				var got, want []string
				for _, id := range expired {
					got = append(got, string(id))
				}
				for id, ms := range view.dedup[tk] {
					if ms < before {
						want = append(want, id)
						delete(view.dedup[tk], id)
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("%s: ExpireDedup(before %d) = %v, want %v", where, before-base, got, want)
				}
			}
		}
		if rng.IntN(4) == 0 {
			tx.Discard()
		} else {
			offset++
			offs := map[StoreTask]int64{}
			for _, tk := range tasks {
				offs[StoreTask{"s", tk}] = offset
				offs[StoreTask{"ids", tk}] = offset
			}
			mustApply(t, tx, offs)
			model = view
		}
		checkCommitted(t, fmt.Sprintf("after round %d", round), db, tasks, model)
	}
}

// checkLatest compares LatestDedup with the model's newest entry.
func checkLatest(t *testing.T, where string, tx *Txn, tk Task, ids map[string]int64) {
	t.Helper()
	at, ok, err := tx.LatestDedup("ids", tk)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, ms := range ids {
		want = max(want, ms)
	}
	if ok != (len(ids) > 0) || (ok && at.UnixMilli() != want) {
		t.Fatalf("%s: LatestDedup = %d %v, want %d %v", where, at.UnixMilli(), ok, want, len(ids) > 0)
	}
}

// checkCommitted compares the committed state, with the dedup store's
// expiry index (every entry, through ExpireDedup in a Txn discarded), to
// the model, reading through a fresh Txn (its kept iterator) and DB.Get.
func checkCommitted(t *testing.T, where string, db *DB, tasks []Task, m modelState) {
	t.Helper()
	for _, tk := range tasks {
		var want []kv
		for _, k := range slices.Sorted(maps.Keys(m.plain[tk])) {
			want = append(want, kv{k, m.plain[tk][k]})
		}
		if got := dbRange(t, db, "s", tk); !equalKVs(got, want) {
			t.Fatalf("%s: %s committed s = %v, want %v", where, tk, got, want)
		}
		tx := db.Begin()
		for i := range 12 {
			k := "k" + strconv.Itoa(i)
			e, ok, err := tx.GetDedup("ids", tk, []byte(k))
			ms, wantOK := m.dedup[tk][k]
			if err != nil || ok != wantOK || (ok && e.FirstSeen.UnixMilli() != ms) {
				t.Fatalf("%s: %s GetDedup(%s) = %d %v %v, want %d %v", where, tk, k, e.FirstSeen.UnixMilli(), ok, err, ms, wantOK)
			}
			v, ok, err := db.Get("ids", tk, []byte(k))
			if err != nil || ok != wantOK || (ok && string(v) != string(EncodeDedup(e))) {
				t.Fatalf("%s: %s DB.Get(%s) = %v %v, want %v", where, tk, k, ok, err, wantOK)
			}
		}
		checkLatest(t, where, tx, tk, m.dedup[tk])
		all, err := tx.ExpireDedup("ids", tk, time.UnixMilli(1<<60), 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, id := range all {
			got = append(got, string(id))
		}
		slices.Sort(got)
		if wantIDs := slices.Sorted(maps.Keys(m.dedup[tk])); !slices.Equal(got, wantIDs) {
			t.Fatalf("%s: %s expiry index lists %v, want %v", where, tk, got, wantIDs)
		}
		tx.Discard()
	}
}

// TestDedupLookupFollowsWritesDuringATxn keeps one Txn open for many
// lookups while restores, wipes and other Txns (applied or discarded)
// change another task's dedup store in random order: every lookup the
// open Txn makes of that task (through the iterator it keeps) must see
// the committed state of the moment, and its own staged writes of its
// own task must survive to its Apply.
func TestDedupLookupFollowsWritesDuringATxn(t *testing.T) {
	for _, cache := range []int{-1, 0} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("cache%d/seed%d", cache, seed), func(t *testing.T) {
				db := openT(t, "", Options{DedupStores: []string{"ids"}, ReadCacheEntries: cache})
				rng := rand.New(rand.NewPCG(seed, 7))
				base := int64(1_700_000_000_000)
				entry := func(ms int64) DedupEntry { return DedupEntry{FirstSeen: time.UnixMilli(ms), Source: "in/0/1"} }
				other := map[string]int64{} // task1's committed ids
				own := map[string]int64{}   // task0's ids staged by tx
				tx := db.Begin()
				offset := int64(0)
				for step := range 400 {
					k := "k" + strconv.Itoa(rng.IntN(10))
					switch rng.IntN(6) {
					case 0:
						ms := base + int64(rng.IntN(50))
						offset++
						if err := db.Restore("ids", task1, []Change{{Key: []byte(k), Value: EncodeDedup(entry(ms))}}, offset); err != nil {
							t.Fatal(err)
						}
						other[k] = ms
					case 1:
						if rng.IntN(4) == 0 {
							if err := db.Wipe("ids", task1); err != nil {
								t.Fatal(err)
							}
							clear(other)
						}
					case 2:
						o := db.Begin()
						ms := base + int64(rng.IntN(50))
						del := rng.IntN(3) == 0
						if del {
							if err := o.Delete("ids", task1, []byte(k)); err != nil {
								t.Fatal(err)
							}
						} else if err := o.PutDedup("ids", task1, []byte(k), entry(ms)); err != nil {
							t.Fatal(err)
						}
						if rng.IntN(4) == 0 {
							o.Discard()
							break
						}
						offset++
						mustApply(t, o, map[StoreTask]int64{{"ids", task1}: offset})
						if del {
							delete(other, k)
						} else {
							other[k] = ms
						}
					case 3:
						ms := base + int64(rng.IntN(50))
						if err := tx.PutDedup("ids", task0, []byte(k), entry(ms)); err != nil {
							t.Fatal(err)
						}
						own[k] = ms
					default:
						tk, want := task1, other
						if rng.IntN(3) == 0 {
							tk, want = task0, own
						}
						e, ok, err := tx.GetDedup("ids", tk, []byte(k))
						ms, wantOK := want[k]
						if err != nil || ok != wantOK || (ok && e.FirstSeen.UnixMilli() != ms) {
							t.Fatalf("step %d: GetDedup(%s, %s) = %d %v %v, want %d %v", step, tk, k, e.FirstSeen.UnixMilli(), ok, err, ms, wantOK)
						}
					}
				}
				offset++
				mustApply(t, tx, map[StoreTask]int64{{"ids", task0}: offset})
				checkCommitted(t, "after the long Txn", db, []Task{task0, task1},
					modelState{plain: map[Task]map[string]string{task0: {}, task1: {}}, dedup: map[Task]map[string]int64{task0: own, task1: other}})
			})
		}
	}
}

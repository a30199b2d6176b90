package engine

import (
	"fmt"
	"slices"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/statestore"
)

// storeInfo is what the engine knows of one store.
type storeInfo struct {
	graph.Store
	sub   int
	topic string // changelog topic
}

// changelogTopic names a store's changelog.
func changelogTopic(app, store string) string { return app + "-" + store + "-changelog" }

// storeInfos lists the graph's stores with their sub-topology and changelog.
func (e *Engine) storeInfos() map[string]storeInfo {
	out := map[string]storeInfo{}
	for _, st := range e.g.SubTopologies {
		for _, s := range st.Stores {
			out[s.Name] = storeInfo{Store: s, sub: st.ID, topic: changelogTopic(e.cfg.AppID, s.Name)}
		}
	}
	return out
}

// openState opens the replica's Pebble database.
func (e *Engine) openState() error {
	var dedup []string
	for name, s := range e.restorer.stores {
		if s.Kind == graph.StoreDedup {
			dedup = append(dedup, name)
		}
	}
	slices.Sort(dedup)
	db, err := statestore.Open(e.cfg.StateDir, statestore.Options{Logger: e.log.Named("state"), DedupStores: dedup})
	if err != nil {
		return fmt.Errorf("engine: state: %w", err)
	}
	e.restorer.db = db
	e.restorer.byTopic = map[string]string{}
	for name, s := range e.restorer.stores {
		e.restorer.byTopic[s.topic] = name
	}
	return nil
}

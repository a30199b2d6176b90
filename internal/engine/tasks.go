package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrTaskSplit is returned by Run when the group assigned this replica
// some, not all, of the topic-partitions of a task: a stage fed by several
// topics (a merge, a join, a repartition topic beside a source) would see
// part of its records and count, deduplicate or join wrongly. The replica
// processes nothing of such a session and stops. Not retryable without a
// change: every member of the group must be a replica of the same
// application and release, whose task assignor hands out whole tasks.
var ErrTaskSplit = errors.New("engine: the group split a task's partitions across replicas")

// checkTasksWhole refuses claims that hold partition p of some source
// topics of a sub-topology but not of all of them.
func (e *Engine) checkTasksWhole(claims map[string][]int32) error {
	var split []string
	for _, st := range e.g.SubTopologies {
		var parts []int32
		for _, t := range st.SourceTopics {
			parts = append(parts, claims[t]...)
		}
		slices.Sort(parts)
		for _, p := range slices.Compact(parts) {
			var have, lack []string
			for _, t := range st.SourceTopics {
				if slices.Contains(claims[t], p) {
					have = append(have, fmt.Sprintf("%s[%d]", t, p))
				} else {
					lack = append(lack, fmt.Sprintf("%s[%d]", t, p))
				}
			}
			if len(lack) > 0 {
				split = append(split, fmt.Sprintf("task %s was given %s without %s", taskName(st.ID, p), strings.Join(have, " "), strings.Join(lack, " ")))
			}
		}
	}
	if len(split) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; every member of group %q must run this application's topology and release (a member that assigns topic-partitions one by one splits tasks)",
		ErrTaskSplit, strings.Join(split, "; "), e.cfg.AppID)
}

package kafka

import (
	"slices"
	"sync"

	"github.com/IBM/sarama"
)

// stickyBeside is sarama's sticky assignor as a balanced member offers it
// second (NewBalancedGroup), for groups with members of an earlier
// release. sarama sends one user data with every assignor a member offers:
// the user data of the member's latest assignment, whichever assignor
// planned it. After a generation planned by the balanced assignor that is
// the balanced assignor's, which the sticky assignor cannot decode: a
// leader planning with it fails, and the group never settles while a
// member of the earlier release is in it. So this one sends the user data
// of the latest assignment the sticky assignor planned for it (none
// before the first), and nothing else.
type stickyBeside struct {
	sarama.BalanceStrategy

	mu       sync.Mutex
	userData []byte
}

var (
	_ sarama.SubscriptionUserDataBalanceStrategy = (*stickyBeside)(nil)
	_ sarama.OnAssignmentBalanceStrategy         = (*stickyBeside)(nil)
)

func newStickyBeside() *stickyBeside {
	return &stickyBeside{BalanceStrategy: sarama.NewBalanceStrategySticky()}
}

// SubscriptionUserData is the sticky user data of the latest assignment
// the sticky assignor planned for this member.
func (s *stickyBeside) SubscriptionUserData([]string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.userData), nil
}

// OnAssignment keeps the user data of an assignment the sticky assignor
// planned (sarama calls it only for the assignor the group chose).
func (s *stickyBeside) OnAssignment(as *sarama.ConsumerGroupMemberAssignment, _ int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userData = slices.Clone(as.UserData)
}

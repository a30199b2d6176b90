package kafka

import (
	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// setSASL turns on the SASL mechanism s names (Client.Validate has
// checked it), or leaves SASL off.
func setSASL(cfg *sarama.Config, s SASL) {
	var hash scram.HashGeneratorFcn
	switch s.mechanism() {
	case mechanismPlain:
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case mechanismSCRAMSHA256:
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		hash = scram.SHA256
	case mechanismSCRAMSHA512:
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		hash = scram.SHA512
	default:
		return
	}
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.User = s.User
	cfg.Net.SASL.Password = s.Password
	if hash != nil {
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: hash} }
	}
}

// scramClient is sarama's SCRAM client on github.com/xdg-go/scram (sarama
// ships the interface, not an implementation).
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

// Begin starts a conversation for the user.
func (c *scramClient) Begin(user, password, authzID string) error {
	cl, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = cl.NewConversation()
	return nil
}

// Step answers the broker's challenge ("" for the first message).
func (c *scramClient) Step(challenge string) (string, error) { return c.conv.Step(challenge) }

// Done reports whether the conversation has ended (the broker's proof
// verified).
func (c *scramClient) Done() bool { return c.conv.Done() }

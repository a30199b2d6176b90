package kafka

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// The SCRAM client sarama gets completes a conversation with a SCRAM
// server for each hash (the server side of github.com/xdg-go/scram, with
// the credentials Kafka would store), and fails one with a wrong password.
func TestSCRAMClient(t *testing.T) {
	for _, tc := range []struct {
		mechanism string
		hash      scram.HashGeneratorFcn
	}{{"SCRAM-SHA-256", scram.SHA256}, {"scram-sha-512", scram.SHA512}} {
		cfg := sarama.NewConfig()
		setSASL(cfg, SASL{Mechanism: tc.mechanism, User: "app", Password: "secret"})
		if !cfg.Net.SASL.Enable || cfg.Net.SASL.SCRAMClientGeneratorFunc == nil || cfg.Net.SASL.User != "app" {
			t.Fatalf("%s: SASL not set up: %+v", tc.mechanism, cfg.Net.SASL)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: sarama refuses the config: %v", tc.mechanism, err)
		}
		for _, password := range []string{"secret", "wrong"} {
			client := cfg.Net.SASL.SCRAMClientGeneratorFunc()
			if err := client.Begin("app", password, ""); err != nil {
				t.Fatal(err)
			}
			ok := converse(t, tc.hash, client)
			if ok != (password == "secret") || ok != client.Done() {
				t.Errorf("%s with password %q: authenticated %v, done %v", tc.mechanism, password, ok, client.Done())
			}
		}
	}
	cfg := sarama.NewConfig()
	setSASL(cfg, SASL{Mechanism: "PLAIN", User: "app", Password: "secret"})
	if cfg.Net.SASL.Mechanism != sarama.SASLTypePlaintext || cfg.Net.SASL.SCRAMClientGeneratorFunc != nil {
		t.Errorf("PLAIN: %+v", cfg.Net.SASL)
	}
}

// converse runs client against a server that knows user app with password
// "secret", the way sarama drives it, and reports whether both sides
// completed.
func converse(t *testing.T, hash scram.HashGeneratorFcn, client sarama.SCRAMClient) bool {
	t.Helper()
	kf := scram.KeyFactors{Salt: "pepper-salt", Iters: 4096}
	cl, err := hash.NewClient("app", "secret", "")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cl.GetStoredCredentialsWithError(kf)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := hash.NewServer(func(user string) (scram.StoredCredentials, error) { return creds, nil })
	if err != nil {
		t.Fatal(err)
	}
	conv := srv.NewConversation()
	msg, err := client.Step("")
	for err == nil && !client.Done() {
		var challenge string
		if challenge, err = conv.Step(msg); err != nil {
			break
		}
		msg, err = client.Step(challenge)
	}
	return err == nil && conv.Valid() && client.Done()
}

package enginetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Cluster drives the nodes of a cluster started with
// `scripts/kafka.sh up --brokers N`: it kills and restarts them through
// that script. Node ids are broker ids (node i of the script is broker i).
type Cluster struct {
	t      testing.TB
	dir    string // the script's ONCEFLOW_KAFKA_DIR
	script string // path of scripts/kafka.sh
}

// ClusterFromEnv returns the cluster named by ONCEFLOW_KAFKA_CLUSTER_DIR
// (the ONCEFLOW_KAFKA_DIR the cluster was started with), and skips the
// test when that or ONCEFLOW_KAFKA_BROKERS is not set.
func ClusterFromEnv(t testing.TB) *Cluster {
	t.Helper()
	dir := os.Getenv("ONCEFLOW_KAFKA_CLUSTER_DIR")
	if dir == "" || os.Getenv("ONCEFLOW_KAFKA_BROKERS") == "" {
		t.Skip("needs a cluster of scripts/kafka.sh up --brokers 3: set ONCEFLOW_KAFKA_BROKERS and ONCEFLOW_KAFKA_CLUSTER_DIR (its ONCEFLOW_KAFKA_DIR)")
	}
	if _, err := os.Stat(filepath.Join(dir, "nodes")); err != nil {
		t.Fatalf("ONCEFLOW_KAFKA_CLUSTER_DIR=%s holds no cluster of scripts/kafka.sh: %v", dir, err)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("enginetest: %v", err)
	}
	return &Cluster{t: t, dir: dir, script: filepath.Join(root, "scripts", "kafka.sh")}
}

// repoRoot finds the folder holding go.mod, from the working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = up
	}
}

// Kill kills node with SIGKILL; its data stays.
func (c *Cluster) Kill(node int32) { c.run("kill", node) }

// Start starts node again on its data and returns once the cluster lists it.
func (c *Cluster) Start(node int32) { c.run("start", node) }

func (c *Cluster) run(verb string, node int32) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.script, verb, fmt.Sprint(node))
	cmd.Env = append(os.Environ(), "ONCEFLOW_KAFKA_DIR="+c.dir)
	out, err := cmd.CombinedOutput()
	c.t.Logf("scripts/kafka.sh %s %d: %s", verb, node, strings.TrimSpace(string(out)))
	if err != nil {
		c.t.Fatalf("scripts/kafka.sh %s %d: %v", verb, node, err)
	}
}

// TxnCoordinator returns the broker id of the transaction coordinator of
// transactional id txnID (the leader of its __transaction_state partition).
func (e *Env) TxnCoordinator(txnID string) int32 {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, ok := e.adm.FindTxnCoordinators(ctx, txnID)[txnID]
	if !ok || resp.Err != nil {
		e.T.Fatalf("find the transaction coordinator of %s: %v", txnID, resp.Err)
	}
	return resp.NodeID
}

// GroupCoordinator returns the broker id of group's coordinator.
func (e *Env) GroupCoordinator(group string) int32 {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, ok := e.adm.FindGroupCoordinators(ctx, group)[group]
	if !ok || resp.Err != nil {
		e.T.Fatalf("find the coordinator of group %s: %v", group, resp.Err)
	}
	return resp.NodeID
}

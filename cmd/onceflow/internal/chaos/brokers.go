package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// cluster kills and restarts the nodes of a cluster started with
// `scripts/kafka.sh up --brokers N` through that script. Node i of the
// script is broker id i.
type cluster struct {
	dir    string // the script's ONCEFLOW_KAFKA_DIR
	script string // path of scripts/kafka.sh
	nodes  int
}

// openCluster reads the cluster in dir (its node count and bootstrap list).
func openCluster(dir, script string) (*cluster, []string, error) {
	n, err := readTrimmed(filepath.Join(dir, "nodes"))
	if err != nil {
		return nil, nil, fmt.Errorf("chaos: %s holds no cluster of scripts/kafka.sh up --brokers N: %w", dir, err)
	}
	nodes, err := strconv.Atoi(n)
	if err != nil || nodes < 1 {
		return nil, nil, fmt.Errorf("chaos: %s/nodes: want a node count, got %q", dir, n)
	}
	boot, err := readTrimmed(filepath.Join(dir, "bootstrap"))
	if err != nil {
		return nil, nil, fmt.Errorf("chaos: bootstrap list of the cluster: %w", err)
	}
	if _, err := os.Stat(script); err != nil {
		return nil, nil, fmt.Errorf("chaos: kafka script: %w", err)
	}
	return &cluster{dir: dir, script: script, nodes: nodes}, strings.Split(boot, ","), nil
}

func readTrimmed(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// kill kills node with SIGKILL (its data stays).
func (c *cluster) kill(ctx context.Context, node int32) error { return c.run(ctx, "kill", node) }

// start starts node on its data; the script returns once it is back in
// the cluster.
func (c *cluster) start(ctx context.Context, node int32) error { return c.run(ctx, "start", node) }

func (c *cluster) run(ctx context.Context, verb string, node int32) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.script, verb, fmt.Sprint(node))
	cmd.Env = append(os.Environ(), "ONCEFLOW_KAFKA_DIR="+c.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: %s %s %d: %w: %s", c.script, verb, node, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// txnCoordinator returns the broker id of the transaction coordinator of
// txnID (the leader of its __transaction_state partition).
func txnCoordinator(ctx context.Context, adm *kadm.Client, txnID string) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, ok := adm.FindTxnCoordinators(ctx, txnID)[txnID]
	if !ok {
		return 0, fmt.Errorf("chaos: no transaction coordinator for %s", txnID)
	}
	if resp.Err != nil {
		return 0, fmt.Errorf("chaos: transaction coordinator of %s: %w", txnID, resp.Err)
	}
	return resp.NodeID, nil
}

// groupCoordinator returns the broker id of group's coordinator.
func groupCoordinator(ctx context.Context, adm *kadm.Client, group string) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, ok := adm.FindGroupCoordinators(ctx, group)[group]
	if !ok {
		return 0, fmt.Errorf("chaos: no coordinator for group %s", group)
	}
	if resp.Err != nil {
		return 0, fmt.Errorf("chaos: coordinator of group %s: %w", group, resp.Err)
	}
	return resp.NodeID, nil
}

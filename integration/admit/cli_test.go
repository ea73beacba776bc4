package admit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgeflow/edgeflow/internal/admit/roomclient"
	"github.com/edgeflow/edgeflow/internal/testenv"
)

// The plain `temporal` CLI example for Admit in docs/operate.md, run as
// written (its room renamed): a room started, its settings updated, a gate's report
// signalled and the room queried, each visible in what the room says.
func TestPlainTemporalCLI(t *testing.T) {
	startWorker(t)
	lines := testenv.DocCommands(t, "admit")
	if len(lines) != 4 {
		t.Fatalf("the docs' admit block: %d commands, want start, update, signal, query", len(lines))
	}
	var outs []string
	for _, line := range lines {
		outs = append(outs, env.TemporalCLI(t, strings.ReplaceAll(line, "shop", "clishop")))
	}
	if !strings.Contains(outs[0], "room/clishop") {
		t.Errorf("start: %s", outs[0])
	}
	if !strings.Contains(outs[1], "settingsVersion") {
		t.Errorf("update: %s", outs[1])
	}
	if !strings.Contains(outs[3], `"total_active_users": 300`) && !strings.Contains(outs[3], `"total_active_users":300`) {
		t.Errorf("query after the update: %s", outs[3])
	}
	rc := roomclient.Client{C: env.Client}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d, err := rc.Describe(ctx, "clishop")
		cancel()
		if err == nil && d.Settings.TotalActiveUsers == 300 && d.Stats.Reports == 1 && d.Stats.ReportsRefused == 0 {
			break
		}
		if time.Now().After(deadline) {
			js, _ := json.Marshal(d)
			t.Fatalf("the room after the CLI's update and report: %s (%v)", js, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/edgeflow/edgeflow/internal/testenv"
)

// The plain `temporal` CLI example for Publish in docs/operate.md, run as
// written (its package renamed to one the test registry serves): it starts a
// version's publish, queries its progress and waits for its result, and the
// run is findable by its search attributes.
func TestPlainTemporalCLI(t *testing.T) {
	setUpStack(t)
	npm.Add("climitt", "3.0.1", demoTarball("3.0.1", demoCSS))
	pub := *acts
	pub.CatalogDir = writeCatalog(t, demoPackage("climitt"))
	startPools(t, &pub, nil)

	lines := testenv.DocCommands(t, "publish")
	if len(lines) != 3 {
		t.Fatalf("the docs' publish block: %d commands, want start, query, result", len(lines))
	}
	var outs []string
	for _, line := range lines {
		outs = append(outs, env.TemporalCLI(t, strings.ReplaceAll(line, "mitt", "climitt")))
	}
	if !strings.Contains(outs[0], "publish/climitt@3.0.1") {
		t.Errorf("start: %s", outs[0])
	}
	if !strings.Contains(outs[1], `"stage"`) {
		t.Errorf("query: %s", outs[1])
	}
	if !strings.Contains(outs[2], "COMPLETED") || !strings.Contains(outs[2], `"files"`) {
		t.Errorf("result: %s", outs[2])
	}
	v := getVersion(t, "climitt", "3.0.1")
	if len(v.Files) == 0 {
		t.Errorf("climitt@3.0.1 committed no files")
	}
	eventually(t, 30*time.Second, "the run is found by Package and Version", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := env.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: `Package = "climitt" AND Version = "3.0.1" AND WorkflowType = "PublishVersion"`})
		if err != nil {
			return false, err.Error()
		}
		return n.GetCount() == 1, n.String()
	})
}

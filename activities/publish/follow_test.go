package publish_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	publishacts "github.com/edgeflow/edgeflow/activities/publish"
	"github.com/edgeflow/edgeflow/internal/metrics"
	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/registry"
	"github.com/edgeflow/edgeflow/internal/publish/registry/registrytest"
	"github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// follow runs FollowRegistry once from since.
func follow(t *testing.T, pub *publishacts.Publish, since string, wait time.Duration) (contract.FollowResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	acts := suite.NewTestActivityEnvironment()
	publishacts.RegisterPublish(acts, pub)
	var res contract.FollowResult
	v, err := acts.ExecuteActivity(contract.FollowRegistryActivity, contract.FollowInput{Registry: contract.RegistryNPM, Since: since, Wait: wait})
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

// The feed's changes of catalog packages come back by catalog name (an npm
// target followed under another name too); changes of other packages only
// move the sequence on, and start nothing.
func TestFollowRegistryKeepsOnlyCatalogPackages(t *testing.T) {
	p := newPools(t, "follow")
	p.addToCatalog(t, "lib-a", entry("lib-a", "*.js"))
	renamed := catalog.Package{Name: "lib-b-renamed", Description: "a test library", License: "MIT", Filename: "lib.min.js",
		Autoupdate: catalog.Autoupdate{Source: "npm", Target: "lib-b", FileMap: []catalog.FileMapEntry{{BasePath: "dist", Files: []string{"*.js"}}}}}
	p.addToCatalog(t, renamed.Name, mustJSON(t, renamed))
	p.pub.Changes = &registry.Changes{URL: p.npm.URL + "/_changes", Client: http.DefaultClient}

	p.npm.Add("not-in-catalog", "1.0.0", nil)
	res, err := follow(t, p.pub, "0", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Names) != 0 || res.LastSeq != "1" || res.Changes != 1 || res.CaughtUpAt.IsZero() {
		t.Fatalf("a change of a package not in the catalog: %+v", res)
	}
	for _, name := range []string{"lib-a", "other", "lib-b", "lib-a"} {
		p.npm.Add(name, "1.0.0-"+name, nil)
	}
	res, err = follow(t, p.pub, res.LastSeq, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Names, ",") != "lib-a,lib-b-renamed" || res.LastSeq != "5" || res.Changes != 4 {
		t.Fatalf("changes of catalog packages: %+v", res)
	}
	// The worker exports the follower's lag, from the last answer that
	// left nothing behind, and counts its polls.
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]float64{}
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			if fam.GetName() == "edgeflow_publish_follower_lag_seconds" {
				found["lag"] = m.GetGauge().GetValue()
			}
			if fam.GetName() == "edgeflow_publish_follower_polls_total" && len(m.GetLabel()) == 2 && m.GetLabel()[1].GetValue() == "ok" {
				found["ok"] = m.GetCounter().GetValue()
			}
		}
	}
	if lag, ok := found["lag"]; !ok || lag < 0 || lag > 60 || found["ok"] < 2 {
		t.Errorf("metrics: %v", found)
	}
}

// A burst of more catalog packages than one poll returns stops at the
// change that reached the bound; the next poll goes on from there, and
// nothing is skipped.
func TestFollowRegistryBoundsAPoll(t *testing.T) {
	p := newPools(t, "followbound")
	n := contract.MaxFollowNames + 5
	for i := range n {
		name := "lib-" + strconv.Itoa(i)
		p.addToCatalog(t, name, entry(name, "*.js"))
		p.npm.Add(name, "1.0.0", nil)
	}
	p.pub.Changes = &registry.Changes{URL: p.npm.URL + "/_changes", Client: http.DefaultClient}
	first, err := follow(t, p.pub, "0", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Names) != contract.MaxFollowNames || first.LastSeq != strconv.Itoa(contract.MaxFollowNames) || !first.CaughtUpAt.IsZero() {
		t.Fatalf("first poll: %d names, last %s, caught up %v", len(first.Names), first.LastSeq, first.CaughtUpAt)
	}
	rest, err := follow(t, p.pub, first.LastSeq, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Names) != 5 || rest.LastSeq != strconv.Itoa(n) || rest.CaughtUpAt.IsZero() {
		t.Fatalf("second poll: %+v", rest)
	}
}

// A feed that stalls or refuses is the poll's error, for the follower to
// back off from.
func TestFollowRegistryStalledFeedFails(t *testing.T) {
	npm := registrytest.New()
	defer npm.Close()
	resume := npm.StallFeed()
	defer resume()
	pub := &publishacts.Publish{CatalogDir: t.TempDir(), Changes: &registry.Changes{URL: npm.URL + "/_changes", Stall: 50 * time.Millisecond}}
	if _, err := follow(t, pub, "0", time.Millisecond); err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("stalled feed: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

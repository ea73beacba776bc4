package deploy

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/edgeflow/edgeflow/internal/devstack"
	"github.com/edgeflow/edgeflow/internal/keyring"
)

// docker-compose.yml describes what `make cluster` runs (devstack's
// ClusterPlan): a service for every process of it, as many replicas as it
// runs processes of that service, and every environment variable it gives
// a product's process set on that process's service. A key file
// (CODEC_KEYS_FILE, which make cluster generates) may be given in compose as
// the keys themselves (CODEC_KEYS, required there): the same keyring source.
func TestComposeRunsWhatMakeClusterRuns(t *testing.T) {
	services := loadCompose(t)
	replicas := loadReplicas(t)
	count := map[string]int{}
	for _, p := range devstack.ClusterPlan() {
		count[p.Service]++
		s := services[p.Service]
		if s == nil {
			t.Errorf("make cluster runs %s; docker-compose.yml has no service %q (have %v)", p.Name, p.Service, slices.Sorted(maps.Keys(services)))
			continue
		}
		for _, e := range p.Env {
			name, _, _ := strings.Cut(e, "=")
			_, ok := s.Environment[name]
			if byValue := keysByValue[name]; !ok && byValue != "" {
				_, ok = s.Environment[byValue]
			}
			if !ok {
				t.Errorf("make cluster gives %s %s; service %q does not set it", p.Name, name, p.Service)
			}
		}
	}
	for name, n := range count {
		if got := replicas[name]; got != n {
			t.Errorf("service %q runs %d replicas; make cluster runs %d of it", name, got, n)
		}
	}
}

// keysByValue maps each keyring source's file variable to its keys variable.
var keysByValue = func() map[string]string {
	m := map[string]string{}
	for _, s := range keyring.Sources {
		m[s.FileEnv] = s.Env
	}
	return m
}()

// loadReplicas reads each service's deploy.replicas (1 when unset).
func loadReplicas(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			Deploy struct {
				Replicas *int `yaml:"replicas"`
			} `yaml:"deploy"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for name, s := range f.Services {
		out[name] = 1
		if s.Deploy.Replicas != nil {
			out[name] = *s.Deploy.Replicas
		}
	}
	return out
}

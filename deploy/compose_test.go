package deploy

// Static checks of the container deployment: no Docker engine runs where the
// tests do, so these read docker-compose.yml, the Dockerfile and
// temporal-setup.sh and hold them against the code: every service, build
// target, command, environment variable and search attribute they name
// exists. The products' contracts (internal/devstack.Products) say which
// worker pools and search attributes there must be.

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

// infrastructure are the services besides the worker pools (the rest of
// the cluster's topology is held to make cluster's in cluster_test.go).
var infrastructure = []string{"postgresql", "temporal-schema", "temporal-frontend", "temporal-setup", "temporal-ui", "minio1", "mirror", "schedule", "gate-keys", "console"}

type service struct {
	Build *struct {
		Target string `yaml:"target"`
	} `yaml:"build"`
	Environment map[string]*string           `yaml:"environment"` // merge keys resolved by the decoder
	DependsOn   map[string]map[string]string `yaml:"depends_on"`
	Entrypoint  []string                     `yaml:"entrypoint"`
	Volumes     []string                     `yaml:"volumes"`
}

func loadCompose(t *testing.T) map[string]*service {
	t.Helper()
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]*service `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f.Services
}

// stage is one Dockerfile stage: what it copies out of the build stage and
// the command it runs.
type stage struct {
	binaries   map[string]string // path in the image → path in the build stage
	entrypoint []string
}

var (
	fromLine       = regexp.MustCompile(`(?im)^FROM\s+\S+(?:\s+AS\s+(\S+))?\s*$`)
	copyFromBuild  = regexp.MustCompile(`(?m)^COPY\s+--from=build\s+(.+)$`)
	entrypointLine = regexp.MustCompile(`(?m)^ENTRYPOINT\s+(\[.*\])\s*$`)
	goBuild        = regexp.MustCompile(`go build [^\n]*?-o (/\S+/) ((?:\./\S+ ?)+)`)
)

// loadDockerfile reads the stages (by name) and what the build stage builds:
// output path → package.
func loadDockerfile(t *testing.T) (map[string]*stage, map[string]string) {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	built := map[string]string{}
	for _, m := range goBuild.FindAllStringSubmatch(text, -1) {
		for _, pkg := range strings.Fields(m[2]) {
			built[m[1]+path.Base(pkg)] = pkg
		}
	}
	stages := map[string]*stage{}
	bounds := fromLine.FindAllStringSubmatchIndex(text, -1)
	for i, b := range bounds {
		end := len(text)
		if i+1 < len(bounds) {
			end = bounds[i+1][0]
		}
		if b[2] < 0 {
			continue
		}
		body := text[b[1]:end]
		st := &stage{binaries: map[string]string{}}
		for _, c := range copyFromBuild.FindAllStringSubmatch(body, -1) {
			args := strings.Fields(c[1])
			dst := args[len(args)-1]
			srcs := args[:len(args)-1]
			for _, src := range srcs {
				if len(srcs) > 1 || strings.HasSuffix(dst, "/") {
					st.binaries[path.Join(dst, path.Base(src))] = src
				} else {
					st.binaries[dst] = src
				}
			}
		}
		if e := entrypointLine.FindStringSubmatch(body); e != nil {
			if err := json.Unmarshal([]byte(e[1]), &st.entrypoint); err != nil {
				t.Errorf("Dockerfile stage %s: ENTRYPOINT %s: %v", text[b[2]:b[3]], e[1], err)
			}
		}
		stages[text[b[2]:b[3]]] = st
	}
	if len(built) == 0 || len(stages) == 0 {
		t.Fatalf("Dockerfile: found %d go build outputs and %d named stages", len(built), len(stages))
	}
	return stages, built
}

// Every worker pool of every product, and the rest of the system, is a service.
func TestEveryServiceExists(t *testing.T) {
	services := loadCompose(t)
	for _, name := range append(devstack.TaskQueues(), infrastructure...) {
		if services[name] == nil {
			t.Errorf("docker-compose.yml: service %q is missing (have %v)", name, slices.Sorted(maps.Keys(services)))
		}
	}
	for name, s := range services {
		for dep := range s.DependsOn {
			if services[dep] == nil {
				t.Errorf("service %q depends on %q, which is not a service", name, dep)
			}
		}
	}
}

// Every build target is a Dockerfile stage, the binaries it copies are built
// from main packages, and the command it runs is one of them.
func TestBuildTargetsAndCommandsExist(t *testing.T) {
	services := loadCompose(t)
	stages, built := loadDockerfile(t)
	for out, pkg := range built {
		name, err := exec.Command("go", "list", "-f", "{{.Name}}", "../"+pkg).Output()
		if err != nil || strings.TrimSpace(string(name)) != "main" {
			t.Errorf("Dockerfile builds %s into %s, which is not a main package (%q, %v)", pkg, out, name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		if s.Build == nil {
			continue
		}
		st := stages[s.Build.Target]
		if st == nil {
			t.Errorf("service %q: build target %q is not a Dockerfile stage (have %v)", name, s.Build.Target, slices.Sorted(maps.Keys(stages)))
			continue
		}
		for dst, src := range st.binaries {
			if built[src] == "" {
				t.Errorf("stage %q copies %s to %s; the build stage builds no such binary", s.Build.Target, src, dst)
			}
		}
		command := st.entrypoint
		if len(s.Entrypoint) > 0 {
			command = s.Entrypoint
		}
		if len(command) == 0 {
			t.Errorf("service %q runs no command: neither it nor stage %q sets an entrypoint", name, s.Build.Target)
			continue
		}
		bin := command[0]
		if bin == "/bin/sh" {
			// A shell one-shot: every command its script runs must be in the image.
			for _, step := range strings.Split(command[len(command)-1], "&&") {
				if word := strings.Fields(step); len(word) == 0 || !hasBinary(st, word[0]) {
					t.Errorf("service %q runs %q, whose command stage %q does not contain (%v)", name, step, s.Build.Target, slices.Sorted(maps.Keys(st.binaries)))
				}
			}
			continue
		}
		if _, ok := st.binaries[bin]; !ok {
			t.Errorf("service %q runs %s, which stage %q does not contain (%v)", name, bin, s.Build.Target, slices.Sorted(maps.Keys(st.binaries)))
		}
	}
	for _, q := range devstack.TaskQueues() {
		if s := services[q]; s == nil || s.Build == nil || !hasBinary(stages[s.Build.Target], q) {
			t.Errorf("task queue %q: its service must run the %s worker (workers/%s) built from the Dockerfile", q, q, q)
		}
	}
}

func hasBinary(st *stage, name string) bool {
	if st == nil {
		return false
	}
	for dst := range st.binaries {
		if path.Base(dst) == name {
			return true
		}
	}
	return false
}

// Every environment variable a service of ours sets is read by the Go code
// its image is built from: a typo or a variable set on the wrong service
// fails here.
func TestEnvironmentIsReadByTheCode(t *testing.T) {
	services := loadCompose(t)
	stages, built := loadDockerfile(t)
	quoted := regexp.MustCompile(`"[A-Z][A-Z0-9_]*"`)
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		if s.Build == nil || len(s.Environment) == 0 || stages[s.Build.Target] == nil {
			continue
		}
		var pkgs []string
		for _, src := range stages[s.Build.Target].binaries {
			if pkg := built[src]; pkg != "" { // else TestBuildTargetsAndCommandsExist reports it
				pkgs = append(pkgs, "../"+pkg)
			}
		}
		if len(pkgs) == 0 {
			continue
		}
		read := map[string]bool{}
		for _, file := range goFilesOf(t, pkgs) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range quoted.FindAll(src, -1) {
				read[strings.Trim(string(m), `"`)] = true
			}
		}
		for _, env := range slices.Sorted(maps.Keys(s.Environment)) {
			if !read[env] {
				t.Errorf("service %q sets %s, which none of the code of %v reads", name, env, pkgs)
			}
		}
	}
}

// goFilesOf lists the non-test Go files of this module that pkgs compile,
// and those of the modules that read the environment for it.
func goFilesOf(t *testing.T, pkgs []string) []string {
	t.Helper()
	// Our code, and the modules that read settings on our behalf: the
	// SDK's environment configuration (TEMPORAL_*) and OpenTelemetry's
	// SDK and exporters (OTEL_*).
	cmd := exec.Command("go", append([]string{"list", "-deps", "-f", `{{if .Module}}{{if or .Module.Main (eq .Module.Path "go.temporal.io/sdk/contrib/envconfig" "go.opentelemetry.io/otel/sdk" "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp" "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc")}}{{range .GoFiles}}{{$.Dir}}/{{.}}
{{end}}{{end}}{{end}}`}, pkgs...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", pkgs, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// temporal-setup.sh registers exactly the search attributes of every
// product's contract, and the temporal-setup service runs it.
func TestSetupRegistersTheSearchAttributes(t *testing.T) {
	want, err := devstack.SearchAttributes()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("temporal-setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^SEARCH_ATTRIBUTES="([^"]*)"`).FindSubmatch(data)
	if m == nil {
		t.Fatal(`temporal-setup.sh: no SEARCH_ATTRIBUTES="NAME=TYPE ..." line`)
	}
	got := map[string]string{}
	for _, pair := range strings.Fields(string(m[1])) {
		name, typ, _ := strings.Cut(pair, "=")
		got[name] = typ
	}
	if !maps.Equal(got, want) {
		t.Errorf("temporal-setup.sh registers %v; the contracts declare %v", got, want)
	}
	setup := loadCompose(t)["temporal-setup"]
	if setup == nil {
		return
	}
	mounted := ""
	for _, v := range setup.Volumes {
		if src, dst, ok := strings.Cut(v, ":"); ok && filepath.Clean(src) == "deploy/temporal-setup.sh" {
			mounted, _, _ = strings.Cut(dst, ":")
		}
	}
	if mounted == "" || !slices.Contains(setup.Entrypoint, mounted) {
		t.Errorf("service temporal-setup: entrypoint %v does not run deploy/temporal-setup.sh mounted into the container (%v)", setup.Entrypoint, setup.Volumes)
	}
}

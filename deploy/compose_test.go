package deploy

// Static checks of the container deployment: no Docker engine runs where the
// tests do, so these read docker-compose.yml, the Dockerfile and .dockerignore
// and hold them against the repository — the mistakes that otherwise only
// show up as a container that never becomes healthy.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/edgeflow/edgeflow/internal/devstack"
)

// requiredServices are the parts of the system the compose file must run.
var requiredServices = []string{
	"postgresql", "temporal", "temporal-setup", "temporal-ui", "minio",
	"pipeline", "compress", "edge",
}

// scalableServices are started with `docker compose up --scale NAME=N`.
var scalableServices = []string{"compress"}

// ---- docker-compose.yml ------------------------------------------------------

type composeFile struct {
	Services map[string]*service `yaml:"services"`
	Volumes  map[string]any      `yaml:"volumes"`
}

type service struct {
	Image         string       `yaml:"image"`
	Build         *buildSpec   `yaml:"build"`
	ContainerName string       `yaml:"container_name"`
	Ports         []any        `yaml:"ports"`
	Environment   envVars      `yaml:"environment"`
	DependsOn     dependsOn    `yaml:"depends_on"`
	Healthcheck   *healthcheck `yaml:"healthcheck"`
	Entrypoint    any          `yaml:"entrypoint"`
	Restart       string       `yaml:"restart"`
	Volumes       []any        `yaml:"volumes"`
}

// ours says whether the service runs an image built from this repository.
func (s *service) ours() bool { return s.Build != nil }

// oneShot says whether the service is meant to run once and exit.
func (s *service) oneShot() bool { return s.Restart == "" || s.Restart == "no" }

// buildSpec is `build: DIR` or `build: {context, dockerfile, target}`.
type buildSpec struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
	Target     string `yaml:"target"`
}

func (b *buildSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		b.Context = n.Value
		return nil
	}
	type plain buildSpec
	return n.Decode((*plain)(b))
}

// envVars is `environment:` in either of its forms: a mapping (where YAML
// merge keys bring in the shared x- blocks) or a list of NAME=VALUE.
type envVars map[string]string

func (e *envVars) UnmarshalYAML(n *yaml.Node) error {
	out := envVars{}
	switch n.Kind {
	case yaml.MappingNode:
		var m map[string]*string
		if err := n.Decode(&m); err != nil {
			return err
		}
		for k, v := range m {
			if v != nil {
				out[k] = *v
			} else {
				out[k] = ""
			}
		}
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			out[k] = v
		}
	default:
		return fmt.Errorf("line %d: environment must be a mapping or a list", n.Line)
	}
	*e = out
	return nil
}

// dependsOn is `depends_on:` as a list of names or a mapping of name to condition.
type dependsOn map[string]string

func (d *dependsOn) UnmarshalYAML(n *yaml.Node) error {
	out := dependsOn{}
	switch n.Kind {
	case yaml.SequenceNode:
		var names []string
		if err := n.Decode(&names); err != nil {
			return err
		}
		for _, name := range names {
			out[name] = "service_started"
		}
	case yaml.MappingNode:
		var m map[string]struct {
			Condition string `yaml:"condition"`
		}
		if err := n.Decode(&m); err != nil {
			return err
		}
		for name, dep := range m {
			out[name] = orDefault(dep.Condition, "service_started")
		}
	default:
		return fmt.Errorf("line %d: depends_on must be a list or a mapping", n.Line)
	}
	*d = out
	return nil
}

type healthcheck struct {
	Test    any  `yaml:"test"`
	Disable bool `yaml:"disable"`
}

// command returns the healthcheck command as one string.
func (h *healthcheck) command() string {
	switch t := h.Test.(type) {
	case string:
		return t
	case []any:
		parts := make([]string, len(t))
		for i, p := range t {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, " ")
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ---- Dockerfile --------------------------------------------------------------

type dockerfile struct {
	stages []*stage
	byName map[string]*stage
}

type stage struct {
	name       string // the AS name; empty for an unnamed stage
	base       string // image or earlier stage it starts FROM
	line       int
	copies     []copyInstr
	entrypoint []string // exec or shell form, nil when the stage sets none
	goBuilds   []goBuild
}

type copyInstr struct {
	from string // --from stage or image; empty for the build context
	srcs []string
	dest string
	line int
}

// goBuild is one `go build` in a RUN instruction.
type goBuild struct {
	line     int
	pkgs     []string          // ./relative package paths
	binaries map[string]string // output path -> package
}

// parent is the stage this one builds on, nil when it starts from an image.
func (d *dockerfile) parent(s *stage) *stage { return d.byName[s.base] }

// chain is s and the stages it builds on, s first.
func (d *dockerfile) chain(s *stage) []*stage {
	var out []*stage
	for cur := s; cur != nil && !slices.Contains(out, cur); cur = d.parent(cur) {
		out = append(out, cur)
	}
	return out
}

// installed maps each path a COPY --from=<stage> put into the image of s
// (or of a stage it builds on) to the builder path it came from.
func (d *dockerfile) installed(s *stage) map[string]copySource {
	out := map[string]copySource{}
	for _, st := range d.chain(s) {
		for _, c := range st.copies {
			if d.byName[c.from] == nil {
				continue
			}
			for _, src := range c.srcs {
				dst := c.dest
				if strings.HasSuffix(dst, "/") || len(c.srcs) > 1 {
					dst = path.Join(dst, path.Base(src))
				}
				out[dst] = copySource{stage: c.from, path: src, line: c.line}
			}
		}
	}
	return out
}

type copySource struct {
	stage, path string
	line        int
}

// packagesOf returns the ./ packages whose binaries the image of s contains.
func (d *dockerfile) packagesOf(s *stage) []string {
	var pkgs []string
	for _, src := range d.installed(s) {
		for _, b := range d.byName[src.stage].goBuilds {
			if pkg, ok := b.binaries[src.path]; ok && !slices.Contains(pkgs, pkg) {
				pkgs = append(pkgs, pkg)
			}
		}
	}
	slices.Sort(pkgs)
	return pkgs
}

// parseDockerfile reads the instructions this test needs: FROM, COPY/ADD,
// RUN (for go build) and ENTRYPOINT, with line continuations joined.
func parseDockerfile(t *testing.T, file string) *dockerfile {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	d := &dockerfile{byName: map[string]*stage{}}
	var cur *stage
	var logical strings.Builder
	startLine := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && logical.Len() == 0) {
			continue // comments may sit inside a continued instruction too
		}
		if logical.Len() == 0 {
			startLine = n
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			logical.WriteString(body + " ")
			continue
		}
		logical.WriteString(trimmed)
		instr := logical.String()
		logical.Reset()
		keyword, rest, _ := strings.Cut(instr, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(keyword) {
		case "FROM":
			args := withoutFlags(strings.Fields(rest))
			if len(args) == 0 {
				t.Fatalf("Dockerfile:%d: FROM without an image", startLine)
			}
			cur = &stage{base: args[0], line: startLine}
			if len(args) >= 3 && strings.EqualFold(args[1], "AS") {
				cur.name = args[2]
				if d.byName[cur.name] != nil {
					t.Errorf("Dockerfile:%d: stage %q is defined twice", startLine, cur.name)
				}
				d.byName[cur.name] = cur
			}
			d.stages = append(d.stages, cur)
		case "COPY", "ADD":
			if cur == nil {
				t.Fatalf("Dockerfile:%d: %s before FROM", startLine, keyword)
			}
			c := copyInstr{line: startLine}
			var args []string
			for _, f := range strings.Fields(rest) {
				if v, ok := strings.CutPrefix(f, "--from="); ok {
					c.from = v
				} else if !strings.HasPrefix(f, "--") {
					args = append(args, f)
				}
			}
			if strings.HasPrefix(strings.Join(args, " "), "[") {
				args = nil
				if err := json.Unmarshal([]byte(rest[strings.Index(rest, "["):]), &args); err != nil {
					t.Fatalf("Dockerfile:%d: %s in JSON form: %v", startLine, keyword, err)
				}
			}
			if len(args) < 2 {
				t.Fatalf("Dockerfile:%d: %s needs a source and a destination", startLine, keyword)
			}
			c.srcs, c.dest = args[:len(args)-1], args[len(args)-1]
			cur.copies = append(cur.copies, c)
		case "ENTRYPOINT":
			if strings.HasPrefix(rest, "[") {
				if err := json.Unmarshal([]byte(rest), &cur.entrypoint); err != nil {
					t.Fatalf("Dockerfile:%d: ENTRYPOINT in JSON form: %v", startLine, err)
				}
			} else {
				cur.entrypoint = []string{"/bin/sh", "-c", rest}
			}
		case "RUN":
			if cur != nil {
				cur.goBuilds = append(cur.goBuilds, parseGoBuilds(startLine, rest)...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	if len(d.stages) == 0 {
		t.Fatal("Dockerfile has no FROM")
	}
	return d
}

func withoutFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			out = append(out, a)
		}
	}
	return out
}

// parseGoBuilds finds every `go build` in a RUN command and works out the
// binary each package becomes: with -o naming a directory (trailing slash)
// or with several packages, go build names each binary after its directory.
func parseGoBuilds(line int, run string) []goBuild {
	toks := strings.Fields(run)
	var out []goBuild
	for i := 0; i+1 < len(toks); i++ {
		if toks[i] != "go" || toks[i+1] != "build" {
			continue
		}
		b := goBuild{line: line, binaries: map[string]string{}}
		output := ""
		for j := i + 2; j < len(toks); j++ {
			tok := toks[j]
			if tok == "&&" || tok == "||" || tok == ";" || tok == "|" {
				break
			}
			switch {
			case tok == "-o" && j+1 < len(toks):
				output = toks[j+1]
				j++
			case strings.HasPrefix(tok, "-o="):
				output = strings.TrimPrefix(tok, "-o=")
			case strings.HasPrefix(tok, "./"):
				b.pkgs = append(b.pkgs, strings.TrimSuffix(tok, ";"))
			}
		}
		for _, pkg := range b.pkgs {
			switch {
			case output == "":
				b.binaries[path.Base(pkg)] = pkg
			case strings.HasSuffix(output, "/") || len(b.pkgs) > 1:
				b.binaries[path.Join(output, path.Base(pkg))] = pkg
			default:
				b.binaries[output] = pkg
			}
		}
		out = append(out, b)
	}
	return out
}

// ---- .dockerignore -------------------------------------------------------------

type ignoreRule struct {
	re      *regexp.Regexp
	exclude bool // false for a "!" exception
	text    string
}

// parseDockerignore compiles .dockerignore the way the Docker builder reads
// it: patterns are relative to the context root, * and ? stay within one path
// element, ** spans any number, a pattern also excludes everything below a
// directory it matches, and the last matching line wins.
func parseDockerignore(t *testing.T, file string) []ignoreRule {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("read .dockerignore: %v", err)
	}
	var rules []ignoreRule
	for line := range strings.Lines(string(data)) {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		r := ignoreRule{exclude: true, text: p}
		if rest, ok := strings.CutPrefix(p, "!"); ok {
			r.exclude, p = false, strings.TrimSpace(rest)
		}
		p = strings.TrimPrefix(path.Clean("/"+p), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(p); i++ {
			switch c := p[i]; {
			case strings.HasPrefix(p[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				re.WriteString(".*")
				i++
			case c == '*':
				re.WriteString("[^/]*")
			case c == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("(/.*)?$")
		r.re = regexp.MustCompile(re.String())
		rules = append(rules, r)
	}
	return rules
}

// ignoredBy returns the rule that leaves rel (slash-separated, relative to the
// context root) out of the build context, or "" when it is sent.
func ignoredBy(rules []ignoreRule, rel string) string {
	by := ""
	for _, r := range rules {
		if r.re.MatchString(rel) {
			if r.exclude {
				by = r.text
			} else {
				by = ""
			}
		}
	}
	return by
}

// ---- repository ----------------------------------------------------------------

type repo struct {
	root    string
	compose composeFile
	docker  *dockerfile
	ignore  []ignoreRule
}

type goPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	EmbedFiles []string
	Module     *struct{ Main bool }
}

var (
	loadOnce sync.Once
	loaded   *repo
	loadErr  error
)

func load(t *testing.T) *repo {
	t.Helper()
	loadOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			loadErr = err
			return
		}
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
			loadErr = fmt.Errorf("repository root not found above deploy/: %v", err)
			return
		}
		data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
		if err != nil {
			loadErr = err
			return
		}
		r := &repo{root: root}
		if err := yaml.Unmarshal(data, &r.compose); err != nil {
			loadErr = fmt.Errorf("docker-compose.yml: %v", err)
			return
		}
		if len(r.compose.Services) == 0 {
			loadErr = fmt.Errorf("docker-compose.yml defines no services")
			return
		}
		loaded = r
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	// The Dockerfile parser reports through t, so it runs per test; it is cheap.
	r := *loaded
	r.docker = parseDockerfile(t, filepath.Join(r.root, "Dockerfile"))
	r.ignore = parseDockerignore(t, filepath.Join(r.root, ".dockerignore"))
	return &r
}

// deps lists the packages of this module that pkgs (./ paths) compile in, as
// the image build sees them (CGO_ENABLED=0, as in the Dockerfile).
func (r *repo) deps(t *testing.T, pkgs []string) []goPackage {
	t.Helper()
	key := strings.Join(pkgs, " ")
	depsCache.Lock()
	defer depsCache.Unlock()
	if got, ok := depsCache.m[key]; ok {
		return got
	}
	args := append([]string{"list", "-deps", "-json=ImportPath,Dir,GoFiles,EmbedFiles,Module"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", key, err, stderr.String())
	}
	var list []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Module != nil && p.Module.Main {
			list = append(list, p)
		}
	}
	depsCache.m[key] = list
	return list
}

var depsCache = struct {
	sync.Mutex
	m map[string][]goPackage
}{m: map[string][]goPackage{}}

// targetStage returns the Dockerfile stage a service builds, or nil after
// reporting why there is none.
func (r *repo) targetStage(t *testing.T, name string, s *service) *stage {
	t.Helper()
	if s.Build.Target == "" {
		t.Errorf("service %q: build.target is empty; the Dockerfile has several targets and without one Docker builds the last (%q)",
			name, r.docker.stages[len(r.docker.stages)-1].name)
		return nil
	}
	st := r.docker.byName[s.Build.Target]
	if st == nil {
		t.Errorf("service %q: build.target %q is not a stage of the Dockerfile (stages: %s)",
			name, s.Build.Target, strings.Join(slices.Sorted(maps.Keys(r.docker.byName)), ", "))
	}
	return st
}

func (r *repo) sortedServices() []string {
	return slices.Sorted(maps.Keys(r.compose.Services))
}

// ---- tests ---------------------------------------------------------------------

func TestRequiredServicesExist(t *testing.T) {
	r := load(t)
	for _, name := range requiredServices {
		if r.compose.Services[name] == nil {
			t.Errorf("docker-compose.yml: service %q is missing (have: %s)", name, strings.Join(r.sortedServices(), ", "))
		}
	}
}

func TestDependsOnNamesExistingServices(t *testing.T) {
	r := load(t)
	for _, name := range r.sortedServices() {
		s := r.compose.Services[name]
		for _, dep := range slices.Sorted(maps.Keys(s.DependsOn)) {
			cond := s.DependsOn[dep]
			target := r.compose.Services[dep]
			switch {
			case target == nil:
				t.Errorf("service %q: depends_on names %q, which is not a service", name, dep)
				continue
			case dep == name:
				t.Errorf("service %q: depends_on names itself", name)
			}
			switch cond {
			case "service_started":
			case "service_healthy":
				if target.Healthcheck == nil || target.Healthcheck.Disable {
					t.Errorf("service %q: depends_on %q with condition service_healthy, but %q has no healthcheck, so it never becomes healthy", name, dep, dep)
				}
			case "service_completed_successfully":
				if !target.oneShot() {
					t.Errorf("service %q: depends_on %q with condition service_completed_successfully, but %q has restart: %s, so it is not a one-shot", name, dep, dep, target.Restart)
				}
			default:
				t.Errorf("service %q: depends_on %q has unknown condition %q", name, dep, cond)
			}
		}
	}
}

func TestBuildTargetsAreDockerfileStages(t *testing.T) {
	r := load(t)
	ours := 0
	for _, name := range r.sortedServices() {
		s := r.compose.Services[name]
		if !s.ours() {
			continue
		}
		ours++
		if ctx := filepath.Join(r.root, orDefault(s.Build.Context, ".")); filepath.Clean(ctx) != r.root {
			t.Errorf("service %q: build.context is %q; the Dockerfile copies go.mod and the packages from the repository root, so the context must be \".\"", name, s.Build.Context)
		}
		if df := orDefault(s.Build.Dockerfile, "Dockerfile"); df != "Dockerfile" {
			t.Errorf("service %q: build.dockerfile is %q; this test checks the repository's Dockerfile only", name, df)
		}
		st := r.targetStage(t, name, s)
		if st == nil {
			continue
		}
		if st.entrypoint == nil && s.Entrypoint == nil {
			t.Errorf("service %q: build.target %q sets no ENTRYPOINT and the service sets no entrypoint, so it would run the image's default command", name, st.name)
		}
	}
	for _, name := range []string{"pipeline", "compress", "edge"} {
		if s := r.compose.Services[name]; s != nil && !s.ours() {
			t.Errorf("service %q: has no build section; it must be built from the repository's Dockerfile", name)
		}
	}
	if ours == 0 {
		t.Error("docker-compose.yml: no service is built from the Dockerfile")
	}
}

func TestDockerfileBuildsMainPackages(t *testing.T) {
	r := load(t)
	total := 0
	for _, st := range r.docker.stages {
		for _, b := range st.goBuilds {
			if len(b.pkgs) == 0 {
				t.Errorf("Dockerfile:%d: go build names no ./ package", b.line)
			}
			for _, pkg := range b.pkgs {
				total++
				if err := isMainPackage(filepath.Join(r.root, filepath.FromSlash(pkg))); err != nil {
					t.Errorf("Dockerfile:%d: go build %s: %v", b.line, pkg, err)
				}
			}
		}
	}
	if total == 0 {
		t.Fatal("Dockerfile: no `go build ./...` found")
	}
}

// isMainPackage reports why dir is not a directory holding package main.
func isMainPackage(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("no such package directory: %v", err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		names = append(names, n+": package "+f.Name.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("%s has no non-test .go file", dir)
	}
	return fmt.Errorf("%s is not package main (%s)", dir, strings.Join(names, ", "))
}

func TestDockerfileTargetsRunBuiltBinaries(t *testing.T) {
	r := load(t)
	for _, st := range r.docker.stages {
		for _, c := range st.copies {
			from := r.docker.byName[c.from]
			if from == nil || len(from.goBuilds) == 0 {
				continue
			}
			for _, src := range c.srcs {
				built := false
				for _, b := range from.goBuilds {
					_, ok := b.binaries[src]
					built = built || ok
				}
				if !built {
					t.Errorf("Dockerfile:%d: stage %q copies %s from %q, which no go build there produces (it builds: %s)",
						c.line, st.name, src, c.from, builtBinaries(from))
				}
			}
		}
		if st.entrypoint == nil || st.name == "" {
			continue
		}
		bin := st.entrypoint[0]
		if !path.IsAbs(bin) {
			t.Errorf("Dockerfile:%d: stage %q: ENTRYPOINT %q is not an absolute path; nothing guarantees PATH in every runtime", st.line, st.name, bin)
			continue
		}
		if _, ok := r.docker.installed(st)[bin]; !ok && !strings.HasPrefix(bin, "/bin/") {
			t.Errorf("Dockerfile:%d: stage %q: ENTRYPOINT runs %s, but no COPY --from a build stage puts a binary there", st.line, st.name, bin)
		}
	}
}

func builtBinaries(st *stage) string {
	var out []string
	for _, b := range st.goBuilds {
		out = append(out, slices.Collect(maps.Keys(b.binaries))...)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func TestBuildContextKeepsWhatTheBuildNeeds(t *testing.T) {
	r := load(t)
	for _, st := range r.docker.stages {
		for _, c := range st.copies {
			if c.from != "" {
				continue
			}
			for _, src := range c.srcs {
				if src == "." || src == "./" {
					continue
				}
				rel := path.Clean(strings.TrimPrefix(src, "./"))
				if _, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(rel))); err != nil {
					t.Errorf("Dockerfile:%d: COPY %s: not in the repository: %v", c.line, src, err)
				} else if by := ignoredBy(r.ignore, rel); by != "" {
					t.Errorf("Dockerfile:%d: COPY %s: excluded from the build context by .dockerignore line %q", c.line, src, by)
				}
			}
		}
	}
	// The builder copies the whole context; every file the built packages
	// compile or embed must survive .dockerignore.
	var pkgs []string
	for _, st := range r.docker.stages {
		for _, b := range st.goBuilds {
			pkgs = append(pkgs, b.pkgs...)
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("Dockerfile: no go build to check the context against")
	}
	for _, p := range r.deps(t, pkgs) {
		for _, f := range append(slices.Clone(p.GoFiles), p.EmbedFiles...) {
			rel, err := filepath.Rel(r.root, filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if by := ignoredBy(r.ignore, filepath.ToSlash(rel)); by != "" {
				t.Errorf(".dockerignore line %q excludes %s, which package %s needs", by, filepath.ToSlash(rel), p.ImportPath)
			}
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if by := ignoredBy(r.ignore, f); by != "" {
			t.Errorf(".dockerignore line %q excludes %s", by, f)
		}
	}
}

func TestScalableServicesHaveNoFixedNameOrHostPort(t *testing.T) {
	r := load(t)
	for _, name := range scalableServices {
		s := r.compose.Services[name]
		if s == nil {
			t.Errorf("service %q: missing", name)
			continue
		}
		if s.ContainerName != "" {
			t.Errorf("service %q: container_name %q prevents `docker compose up --scale %s=N` (names must be unique)", name, s.ContainerName, name)
		}
		if len(s.Ports) > 0 {
			t.Errorf("service %q: ports %v bind host ports, so a second replica of `--scale %s=N` cannot start; use no ports (or expose)", name, s.Ports, name)
		}
	}
}

func TestEnvironmentIsReadByTheCode(t *testing.T) {
	r := load(t)
	quoted := regexp.MustCompile(`"[A-Z][A-Z0-9_]*"`)
	for _, name := range r.sortedServices() {
		s := r.compose.Services[name]
		if !s.ours() || len(s.Environment) == 0 {
			continue
		}
		st := r.targetStage(t, name, s)
		if st == nil {
			continue
		}
		pkgs := r.docker.packagesOf(st)
		if len(pkgs) == 0 {
			t.Errorf("service %q: image target %q contains no binary built from this repository", name, st.name)
			continue
		}
		// Every quoted upper-case name in the non-test Go files the image's
		// binaries are built from: config.Env("S3_ENDPOINT", ...) and friends.
		read := map[string]bool{}
		for _, p := range r.deps(t, pkgs) {
			for _, f := range p.GoFiles {
				src, err := os.ReadFile(filepath.Join(p.Dir, f))
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range quoted.FindAll(src, -1) {
					read[strings.Trim(string(m), `"`)] = true
				}
			}
		}
		for _, env := range slices.Sorted(maps.Keys(s.Environment)) {
			if !read[env] {
				t.Errorf("service %q: environment %s is read by none of the Go code in image target %q (%s and their dependencies): a typo, or set on the wrong service?",
					name, env, st.name, strings.Join(pkgs, ", "))
			}
		}
	}
}

// interpolationDefault matches ${VAR}, ${VAR:-default} and ${VAR-default}.
var interpolationDefault = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}`)

// imagePinned reports why image is not pinned to a version, or "".
func imagePinned(image string) string {
	if m := interpolationDefault.FindStringSubmatch(image); m != nil && m[2] == "" {
		return fmt.Sprintf("its tag comes from $%s with no default", m[1])
	}
	resolved := interpolationDefault.ReplaceAllString(image, "$2")
	if strings.Contains(resolved, "@sha256:") {
		return ""
	}
	lastSlash := strings.LastIndex(resolved, "/")
	colon := strings.LastIndex(resolved, ":")
	if colon < lastSlash+1 {
		return "it has no tag, which means :latest"
	}
	if tag := resolved[colon+1:]; tag == "latest" || tag == "" {
		return fmt.Sprintf("its tag is %q", tag)
	}
	return ""
}

func TestImagesArePinned(t *testing.T) {
	r := load(t)
	for _, name := range r.sortedServices() {
		s := r.compose.Services[name]
		if s.Image == "" {
			if !s.ours() {
				t.Errorf("service %q: neither image nor build", name)
			}
			continue
		}
		if why := imagePinned(s.Image); why != "" {
			t.Errorf("service %q: image %q is not pinned: %s", name, s.Image, why)
		}
	}
	for _, st := range r.docker.stages {
		if r.docker.byName[st.base] != nil || st.base == "scratch" {
			continue
		}
		if why := imagePinned(st.base); why != "" {
			t.Errorf("Dockerfile:%d: FROM %s is not pinned: %s", st.line, st.base, why)
		}
	}
}

func TestLongRunningServicesHaveHealthchecks(t *testing.T) {
	r := load(t)
	for _, name := range r.sortedServices() {
		s := r.compose.Services[name]
		if !s.ours() || s.oneShot() {
			continue
		}
		if s.Healthcheck == nil || s.Healthcheck.Disable {
			t.Errorf("service %q: has no healthcheck", name)
			continue
		}
		test := s.Healthcheck.command()
		if !strings.Contains(test, "/healthz") {
			t.Errorf("service %q: healthcheck %q does not hit /healthz", name, test)
		}
		// The probe must target the port the process listens on.
		for _, key := range []string{"HEALTH_ADDR", "EDGE_ADDR"} {
			addr, ok := s.Environment[key]
			if !ok {
				continue
			}
			port := addr[strings.LastIndex(addr, ":")+1:]
			if !strings.Contains(test, ":"+port+"/healthz") {
				t.Errorf("service %q: healthcheck %q does not probe port %s of %s=%s", name, test, port, key, addr)
			}
		}
	}
}

func TestBindMountSourcesExist(t *testing.T) {
	r := load(t)
	for _, name := range r.sortedServices() {
		for _, v := range r.compose.Services[name].Volumes {
			var src string
			switch v := v.(type) {
			case string:
				src, _, _ = strings.Cut(v, ":")
			case map[string]any:
				if v["type"] == "bind" {
					src, _ = v["source"].(string)
				}
			}
			switch {
			case strings.HasPrefix(src, "./") || strings.HasPrefix(src, "../"):
				if _, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(src))); err != nil {
					t.Errorf("service %q: bind mount source %s: %v", name, src, err)
				}
			case src != "" && !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, "$"):
				if _, ok := r.compose.Volumes[src]; !ok {
					t.Errorf("service %q: named volume %q is not declared under the top-level volumes:", name, src)
				}
			}
		}
	}
}

func TestSetupRegistersTheSearchAttributes(t *testing.T) {
	r := load(t)
	script := filepath.Join(r.root, "deploy", "temporal-setup.sh")
	data, err := os.ReadFile(script)
	if err != nil {
		t.Fatalf("temporal-setup script: %v", err)
	}
	m := regexp.MustCompile(`(?m)^SEARCH_ATTRIBUTES="([^"]*)"`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s: no SEARCH_ATTRIBUTES=\"NAME=TYPE ...\" line", script)
	}
	got := map[string]string{}
	for _, pair := range strings.Fields(string(m[1])) {
		name, typ, ok := strings.Cut(pair, "=")
		if !ok {
			t.Errorf("%s: SEARCH_ATTRIBUTES entry %q is not NAME=TYPE", script, pair)
			continue
		}
		got[name] = typ
	}
	for name, typ := range devstack.SearchAttributes {
		if got[name] != typ {
			t.Errorf("%s: search attribute %s must be registered as %s (as in internal/devstack.SearchAttributes); the script has %q", script, name, typ, got[name])
		}
	}
	for name := range got {
		if _, ok := devstack.SearchAttributes[name]; !ok {
			t.Errorf("%s: registers search attribute %s, which internal/devstack.SearchAttributes (the dev server's list) lacks", script, name)
		}
	}
	// The one-shot must actually run this script.
	s := r.compose.Services["temporal-setup"]
	if s == nil {
		return
	}
	ep := fmt.Sprint(s.Entrypoint)
	mounted := false
	for _, v := range s.Volumes {
		if str, ok := v.(string); ok && strings.HasPrefix(str, "./deploy/temporal-setup.sh:") {
			dst := strings.Split(str, ":")[1]
			mounted = strings.Contains(ep, dst)
		}
	}
	if !mounted {
		t.Errorf("service \"temporal-setup\": entrypoint %v does not run ./deploy/temporal-setup.sh mounted into the container", s.Entrypoint)
	}
}

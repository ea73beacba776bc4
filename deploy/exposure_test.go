package deploy

// What docker-compose.yml exposes and which secrets it needs: the control
// plane (Temporal, its Web UI, MinIO, the console, Redis) is never published
// beyond the host's loopback, only the edges and gates are, and only through
// one opt-in setting whose default is loopback; no secret has a default, so
// no deployment runs on a known one. docs/operate.md's "Deploying safely"
// describes what these tests hold true.

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/edgeflow/edgeflow/internal/keyring"
)

// publicBind is the setting that publishes the edges and the gates beyond
// the host's loopback; its default must be loopback.
const publicBind = "${PUBLIC_BIND_IP:-127.0.0.1}"

// publicTargets are the Dockerfile stages whose services may be published
// through publicBind: what visitors reach.
var publicTargets = []string{"edge", "gate"}

// loopbackIPs are the host addresses a published port may bind otherwise.
var loopbackIPs = []string{"127.0.0.1", "[::1]", "::1"}

// secretName says which variables hold secrets; a *_FILE variable names a
// path to one, not the secret itself.
var secretName = regexp.MustCompile(`KEY|SECRET|PASSWORD|PASSWD|PWD|TOKEN|AUTH|CREDENTIAL`)

func isSecretName(name string) bool {
	return secretName.MatchString(name) && !strings.HasSuffix(name, "_FILE")
}

// optionalCredentials may be empty (their feature is off then), so they are
// the secrets allowed an empty default, and only an empty one.
var optionalCredentials = map[string]string{
	"GITHUB_TOKEN": "raises GitHub's API rate limit for the publish workers; empty: anonymous",
}

// exposure is what a service publishes and runs, as far as these tests read it.
type exposure struct {
	Image       string `yaml:"image"`
	NetworkMode string `yaml:"network_mode"`
	Build       *struct {
		Target string `yaml:"target"`
	} `yaml:"build"`
	Ports       []any             `yaml:"ports"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
}

func loadExposure(t *testing.T) (map[string]*exposure, string) {
	t.Helper()
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]*exposure `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f.Services, string(data)
}

func (s *exposure) target() string {
	if s.Build == nil {
		return ""
	}
	return s.Build.Target
}

// hostIP is the host address a published port binds ("" when it names
// none: every interface), and the port's text for messages.
func hostIP(port any) (ip, text string, err error) {
	switch p := port.(type) {
	case string:
		if strings.HasPrefix(p, "${") {
			end := strings.Index(p, "}")
			if end < 0 {
				return "", p, fmt.Errorf("unterminated variable")
			}
			return p[:end+1], p, nil
		}
		if strings.HasPrefix(p, "[") {
			end := strings.Index(p, "]")
			if end < 0 {
				return "", p, fmt.Errorf("unterminated IPv6 address")
			}
			return p[:end+1], p, nil
		}
		parts := strings.Split(p, ":")
		if len(parts) < 3 {
			return "", p, nil
		}
		return parts[0], p, nil
	case int:
		return "", fmt.Sprint(p), nil
	case map[string]any:
		ip, _ := p["host_ip"].(string)
		return ip, fmt.Sprint(p), nil
	default:
		return "", fmt.Sprint(p), fmt.Errorf("unreadable port entry of type %T", port)
	}
}

// Every published port binds the host's loopback, except the edges' and
// gates', which bind PUBLIC_BIND_IP (loopback unless the operator says).
func TestPublishedPortsBindLoopback(t *testing.T) {
	services, _ := loadExposure(t)
	published := 0
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		if s.NetworkMode == "host" {
			t.Errorf("service %q: network_mode host publishes every port it listens on", name)
		}
		for _, port := range s.Ports {
			published++
			ip, text, err := hostIP(port)
			switch {
			case err != nil:
				t.Errorf("service %q: port %s: %v", name, text, err)
			case ip == publicBind:
				if !slices.Contains(publicTargets, s.target()) {
					t.Errorf("service %q publishes %s through %s, which only the public services (targets %v) may use: bind it to 127.0.0.1", name, text, publicBind, publicTargets)
				}
			case slices.Contains(loopbackIPs, ip):
			case ip == "":
				t.Errorf("service %q publishes %s on every interface of the host: bind it to 127.0.0.1 (or %s for the edges and gates)", name, text, publicBind)
			default:
				t.Errorf("service %q publishes %s on %s: bind it to 127.0.0.1 (or %s for the edges and gates)", name, text, ip, publicBind)
			}
		}
	}
	if published == 0 {
		t.Fatal("docker-compose.yml publishes no port: the test read nothing")
	}
}

// interpolation is one ${NAME...} of the compose file.
var interpolation = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}`)

// requiredSecret matches a value that is exactly one required variable.
var requiredSecret = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*:\?[^}]+\}$`)

// No secret has a default: each is required (${NAME:?why}), so Compose
// refuses to start without it rather than run with a known one.
func TestSecretsHaveNoDefault(t *testing.T) {
	services, text := loadExposure(t)
	text = strings.ReplaceAll(text, "$$", "") // an escaped $, for the container's shell
	secrets := 0
	for _, m := range interpolation.FindAllStringSubmatch(text, -1) {
		name, op, value := m[1], m[2], m[3]
		if !isSecretName(name) {
			continue
		}
		secrets++
		if why, ok := optionalCredentials[name]; ok {
			if !(op == ":-" && value == "") && op != ":?" {
				t.Errorf("%s: optional credential (%s) must be ${%s:-} (empty) or required", m[0], why, name)
			}
			continue
		}
		if op != ":?" || value == "" {
			t.Errorf("%s: secret %s must be required, ${%s:?how to make one}: a default (or an unset variable read as empty) runs the deployment on a known secret", m[0], name, name)
		}
	}
	if secrets == 0 {
		t.Fatal("docker-compose.yml names no secret: the test read nothing")
	}
	for _, name := range slices.Sorted(maps.Keys(services)) {
		for _, key := range slices.Sorted(maps.Keys(services[name].Environment)) {
			value := services[name].Environment[key]
			if isSecretName(key) {
				if _, ok := optionalCredentials[key]; ok && value == "${"+key+":-}" {
					continue
				}
				if !requiredSecret.MatchString(value) {
					t.Errorf("service %q: %s=%q: a secret must come from one required variable, ${NAME:?…}", name, key, value)
				}
			}
			if pass := urlPassword.FindStringSubmatch(value); pass != nil && !requiredSecret.MatchString(pass[1]) {
				t.Errorf("service %q: %s holds a URL whose password %q is not one required variable ${NAME:?…}", name, key, pass[1])
			}
		}
	}
}

// urlPassword is the password of a scheme://user:password@host URL.
var urlPassword = regexp.MustCompile(`://[^/@:]*:(\$\{[^}]*\}|[^@/]*)@`)

// requiredVariables are the variables docker-compose.yml requires.
func requiredVariables(t *testing.T) []string {
	t.Helper()
	_, text := loadExposure(t)
	set := map[string]bool{}
	for _, m := range interpolation.FindAllStringSubmatch(strings.ReplaceAll(text, "$$", ""), -1) {
		if m[2] == ":?" || m[2] == "?" {
			set[m[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Every required variable is listed in .env.example with the way to make
// one and named in docs/operate.md's "Deploying safely"; the .env of
// secrets is neither committed nor sent to the image build.
func TestRequiredVariablesAreDocumented(t *testing.T) {
	required := requiredVariables(t)
	if len(required) == 0 {
		t.Fatal("docker-compose.yml requires no variable")
	}
	example, err := os.ReadFile("../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	doc := section(t, "../docs/operate.md", "## Deploying safely")
	for _, name := range required {
		if !regexp.MustCompile(`(?m)^# .+\n` + name + `=$`).Match(example) {
			t.Errorf(".env.example does not list %s= under the command that makes one, and docker-compose.yml requires it", name)
		}
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/operate.md's Deploying safely does not name `%s`, which docker-compose.yml requires", name)
		}
	}
	if !strings.Contains(doc, "`PUBLIC_BIND_IP`") {
		t.Error("docs/operate.md's Deploying safely does not name `PUBLIC_BIND_IP`, the setting that publishes the edges and gates")
	}
	for file, line := range map[string]string{"../.gitignore": "/.env", "../.dockerignore": ".env"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).Match(data) {
			t.Errorf("%s does not hold %q: the .env of secrets would be committed or copied into the build", file, line)
		}
	}
}

// deploy/gen-env.sh writes every required variable, mode 0600, each a
// fresh value usable where it goes (the codec keys parse, the passwords
// need no escaping in a URL), and keeps what .env already holds.
func TestGenEnvWritesEverySecret(t *testing.T) {
	required := requiredVariables(t)
	dir := t.TempDir()
	env := filepath.Join(dir, ".env")
	if err := os.WriteFile(env, []byte("# kept\nS3_ACCESS_KEY=\nGITHUB_TOKEN=mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() map[string]string {
		t.Helper()
		if out, err := exec.Command("/bin/sh", "gen-env.sh", env).CombinedOutput(); err != nil {
			t.Fatalf("gen-env.sh: %v\n%s", err, out)
		}
		info, err := os.Stat(env)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf(".env has mode %v, want 0600", info.Mode().Perm())
		}
		data, err := os.ReadFile(env)
		if err != nil {
			t.Fatal(err)
		}
		values := map[string]string{}
		for _, line := range strings.Split(string(data), "\n") {
			if name, value, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
				if _, dup := values[name]; dup {
					t.Errorf(".env sets %s twice", name)
				}
				values[name] = value
			}
		}
		return values
	}
	first := run()
	for _, name := range required {
		v := first[name]
		switch {
		case v == "":
			t.Errorf("gen-env.sh left %s, which docker-compose.yml requires, unset", name)
		case name == "CODEC_KEYS":
			if _, err := keyring.Parse(v); err != nil {
				t.Errorf("gen-env.sh's CODEC_KEYS: %v", err)
			}
		case url.UserPassword("u", v).String() != "u:"+v || len(v) < 16:
			t.Errorf("gen-env.sh's %s is %d characters or needs escaping in a URL", name, len(v))
		}
	}
	if first["GITHUB_TOKEN"] != "mine" {
		t.Errorf("gen-env.sh changed GITHUB_TOKEN to %q", first["GITHUB_TOKEN"])
	}
	second := run()
	if !maps.Equal(first, second) {
		t.Error("gen-env.sh run again changed secrets .env already held")
	}
}

// section is the text of a markdown file from heading to the next heading
// of the same level.
func section(t *testing.T, file, heading string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no %q section", file, heading)
		return ""
	}
	rest := text[start+len(heading)+2:]
	level := heading[:strings.Index(heading, " ")+1]
	if end := strings.Index(rest, "\n"+level); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// The Temporal Web UI only reads: no terminate, signal, reset or start from
// whoever reaches it.
func TestWebUIIsReadOnly(t *testing.T) {
	services, _ := loadExposure(t)
	found := false
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		if !strings.HasPrefix(s.Image, "temporalio/ui:") {
			continue
		}
		found = true
		if v := s.Environment["TEMPORAL_DISABLE_WRITE_ACTIONS"]; v != "true" {
			t.Errorf("service %q (the Web UI): TEMPORAL_DISABLE_WRITE_ACTIONS=%q, want true", name, v)
		}
	}
	if !found {
		t.Fatal("docker-compose.yml runs no temporalio/ui service")
	}
}

// gateUser is the Redis ACL user the gates log in as.
const gateUser = "gate"

// Every Redis requires a password, and has the gates' user; every gate logs
// in as that user.
func TestRedisRequiresAuth(t *testing.T) {
	services, _ := loadExposure(t)
	redises := 0
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		if !strings.HasPrefix(s.Image, "redis:") {
			continue
		}
		redises++
		if i := slices.Index(s.Command, "--requirepass"); i < 0 || i+1 >= len(s.Command) || !requiredSecret.MatchString(s.Command[i+1]) {
			t.Errorf("service %q: redis-server runs without --requirepass ${REDIS_PASSWORD:?…} (command %q)", name, s.Command)
		}
		if user, rules := aclUser(s.Command); user != gateUser || len(rules) == 0 {
			t.Errorf("service %q: redis-server defines no --user %s with its rules (command %q)", name, gateUser, s.Command)
		}
	}
	if redises == 0 {
		t.Fatal("docker-compose.yml runs no redis service")
	}
	gates := 0
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		for _, key := range []string{"GATE_REDIS_URL", "GATE_ANYWHERE_REDIS_URL", "ADMIT_REDIS_URL"} {
			url, ok := s.Environment[key]
			if !ok {
				continue
			}
			gates++
			if !regexp.MustCompile(`^(redis|rediss|\$\{REDIS_SCHEME:-redis\})://` + gateUser + `:\$\{REDIS_GATE_PASSWORD:\?[^}]+\}@`).MatchString(url) {
				t.Errorf("service %q: %s=%q does not log in as %s with ${REDIS_GATE_PASSWORD:?…}", name, key, url, gateUser)
			}
		}
	}
	if gates == 0 {
		t.Fatal("no service sets GATE_REDIS_URL")
	}
}

// aclUser reads redis-server's `--user NAME RULE...` arguments.
func aclUser(command []string) (name string, rules []string) {
	i := slices.Index(command, "--user")
	if i < 0 || i+1 >= len(command) {
		return "", nil
	}
	name = command[i+1]
	for _, arg := range command[i+2:] {
		if strings.HasPrefix(arg, "--") {
			break
		}
		rules = append(rules, arg)
	}
	return name, rules
}

// Every gate names the hosts it serves (the gate refuses to start without
// them); a host list is no secret, so a default is fine, but not "*".
func TestGatesNameTheirHosts(t *testing.T) {
	services, _ := loadExposure(t)
	gates := 0
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		if s.target() != "gate" || len(s.Entrypoint) > 0 { // gate-keys runs `gate keygen`
			continue
		}
		gates++
		hosts, ok := s.Environment["GATE_HOSTS"]
		m := regexp.MustCompile(`^\$\{GATE_HOSTS:-([^}]+)\}$`).FindStringSubmatch(hosts)
		switch {
		case !ok || hosts == "":
			t.Errorf("service %q: a gate without GATE_HOSTS refuses to start", name)
		case m != nil && strings.TrimSpace(m[1]) == "*":
			t.Errorf("service %q: GATE_HOSTS defaults to *, every Host: name the hosts", name)
		case m == nil && !requiredSecret.MatchString(hosts) && strings.Contains(hosts, "$"):
			t.Errorf("service %q: GATE_HOSTS=%q may be empty: default it to the hosts (${GATE_HOSTS:-localhost}) or require it", name, hosts)
		}
	}
	if gates == 0 {
		t.Fatal("docker-compose.yml runs no gate")
	}
}

// Every service that starts a migration or opens its credentials has the
// codec keys: the console and the starters seal with them, the migrate
// workers open with them.
func TestMigrationServicesHaveCodecKeys(t *testing.T) {
	services, _ := loadExposure(t)
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s := services[name]
		if name != "console" && name != "migrate" && s.target() != "starters" {
			continue
		}
		if v := s.Environment["CODEC_KEYS"]; !requiredSecret.MatchString(v) || !strings.HasPrefix(v, "${CODEC_KEYS:?") {
			t.Errorf("service %q starts or runs migrations but CODEC_KEYS=%q: set it to ${CODEC_KEYS:?…}, the keys every migration service shares", name, v)
		}
	}
}

// Package hook receives GitHub's webhook deliveries for Publish's git-tag
// sources: a `release` or a tag's `create` event of a repository a catalog
// entry follows starts that entry's check at once, instead of at the
// Schedule's next run. Every delivery is verified as GitHub's "Validating
// webhook deliveries" says: the X-Hub-Signature-256 header is the body's
// HMAC-SHA256 under the hook's secret, compared in constant time.
// Repositories without a hook are still polled by the Schedule.
package hook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
)

// MaxBody bounds a delivery; release and create events are a few KB (a
// release's notes at most a few hundred).
const MaxBody = 1 << 20

// SignatureHeader is where GitHub puts "sha256=<hex HMAC of the body>".
const SignatureHeader = "X-Hub-Signature-256"

// Start starts the check of catalog entry name for a delivery (its ID, as
// GitHub sent it, so a redelivery finds the same check) and returns the
// check's workflow ID.
type Start func(ctx context.Context, name, delivery string) (workflowID string, err error)

// GitHub is the handler of GitHub's webhook deliveries.
type GitHub struct {
	// Secret is the hook's secret (PUBLISH_WEBHOOK_SECRET); empty: every
	// delivery is refused, as the hook is not set up.
	Secret []byte
	// Catalog reads the catalog's entries.
	Catalog func() ([]catalog.Package, error)
	Start   Start
	Log     *slog.Logger // nil: discard
}

// Answer is the JSON body of every answer.
type Answer struct {
	// Started are the checks started (or found started, for a redelivery).
	Started []Started `json:"started,omitempty"`
	// Message says what was done, or what is wrong and where.
	Message string `json:"message"`
}

// Started is one check a delivery started.
type Started struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflowId"`
}

// event is the part of a release or create event used here.
type event struct {
	Action     string `json:"action"`   // release: published, released, prereleased, created, …
	RefType    string `json:"ref_type"` // create: tag or branch
	Ref        string `json:"ref"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// deliveryPattern is what a delivery ID may be to become part of a
// workflow ID (GitHub's are GUIDs).
var deliveryPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

func (h *GitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, Answer{Message: "method: deliveries are POSTed"})
		return
	}
	if len(h.Secret) == 0 {
		answer(w, http.StatusServiceUnavailable, Answer{Message: "the hook has no secret configured (PUBLISH_WEBHOOK_SECRET): every delivery is refused"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		answer(w, http.StatusRequestEntityTooLarge, Answer{Message: fmt.Sprintf("body: larger than %d bytes", MaxBody)})
		return
	case err != nil:
		answer(w, http.StatusBadRequest, Answer{Message: "body: " + err.Error()})
		return
	}
	// The signature is checked before anything in the body is read.
	if msg := h.verify(r.Header.Get(SignatureHeader), body); msg != "" {
		answer(w, http.StatusUnauthorized, Answer{Message: msg})
		return
	}
	kind := r.Header.Get("X-GitHub-Event")
	var ev event
	if kind != "ping" {
		if err := json.Unmarshal(body, &ev); err != nil {
			answer(w, http.StatusBadRequest, Answer{Message: "body: not a JSON event: " + err.Error()})
			return
		}
	}
	switch {
	case kind == "ping":
		answer(w, http.StatusOK, Answer{Message: "pong: the signature is right"})
		return
	case kind == "create" && ev.RefType == "tag":
	case kind == "release" && releaseActions[ev.Action]:
	case kind == "create" || kind == "release":
		answer(w, http.StatusAccepted, Answer{Message: fmt.Sprintf("%s event (%s%s) ignored: only tags and published releases start a check", kind, ev.RefType, ev.Action)})
		return
	default:
		answer(w, http.StatusAccepted, Answer{Message: fmt.Sprintf("X-GitHub-Event %q ignored: only release and create (tag) events start a check", kind)})
		return
	}
	repo := ev.Repository.FullName
	if repo == "" {
		answer(w, http.StatusBadRequest, Answer{Message: "repository.full_name: missing"})
		return
	}
	names, err := h.following(repo)
	if err != nil {
		answer(w, http.StatusInternalServerError, Answer{Message: "catalog: " + err.Error()})
		return
	}
	if len(names) == 0 {
		answer(w, http.StatusNotFound, Answer{Message: fmt.Sprintf("repository %s: no catalog entry follows its tags (autoupdate source git, target %s)", repo, repo)})
		return
	}
	delivery := r.Header.Get("X-GitHub-Delivery")
	if !deliveryPattern.MatchString(delivery) {
		sum := sha256.Sum256(body)
		delivery = hex.EncodeToString(sum[:12]) // the same body is the same delivery
	}
	out := Answer{}
	for _, name := range names {
		id, err := h.Start(r.Context(), name, delivery)
		if err != nil {
			h.log().Warn("a webhook delivery's check did not start", "repository", repo, "library", name, "error", err)
			answer(w, http.StatusBadGateway, Answer{Started: out.Started, Message: fmt.Sprintf("check of %s: not started: %v", name, err)})
			return
		}
		out.Started = append(out.Started, Started{Name: name, WorkflowID: id})
	}
	out.Message = fmt.Sprintf("%s %s of %s: checking %s", kind, ev.Ref+ev.Action, repo, strings.Join(names, ", "))
	h.log().Info("webhook delivery: check started", "repository", repo, "event", kind, "libraries", strings.Join(names, ","), "delivery", delivery)
	answer(w, http.StatusAccepted, out)
}

// releaseActions are the release event's actions that make a tag to publish.
var releaseActions = map[string]bool{"published": true, "released": true, "prereleased": true, "created": true}

// verify says what is wrong with a delivery's signature, or "" when it is
// the body's HMAC-SHA256 under the secret.
func (h *GitHub) verify(header string, body []byte) string {
	if header == "" {
		return SignatureHeader + ": missing; set the hook's secret in GitHub to PUBLISH_WEBHOOK_SECRET's value"
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return SignatureHeader + `: not "sha256=" and 64 hex digits`
	}
	mac := hmac.New(sha256.New, h.Secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return SignatureHeader + ": does not match the body under the hook's secret"
	}
	return ""
}

// following lists the updatable catalog entries whose git source is
// repository owner/name (GitHub's names are case-insensitive).
func (h *GitHub) following(repo string) ([]string, error) {
	pkgs, err := h.Catalog()
	if err != nil && len(pkgs) == 0 {
		return nil, err
	}
	var names []string
	for _, p := range pkgs {
		if !p.Updatable() || p.Autoupdate.Source != catalog.SourceGit {
			continue
		}
		if target, ok := p.Autoupdate.GitHubTarget(); ok && strings.EqualFold(target, repo) {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

func (h *GitHub) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return h.Log
}

func answer(w http.ResponseWriter, status int, a Answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(a)
}

// SecretFromEnv reads the hook's secret: PUBLISH_WEBHOOK_SECRET, or the
// file PUBLISH_WEBHOOK_SECRET_FILE names (its first line), never the
// catalog's repository. from says which, for logs; no secret is nil.
func SecretFromEnv(getenv func(string) string) (secret []byte, from string, err error) {
	if v := getenv("PUBLISH_WEBHOOK_SECRET"); v != "" {
		return []byte(v), "PUBLISH_WEBHOOK_SECRET", nil
	}
	path := getenv("PUBLISH_WEBHOOK_SECRET_FILE")
	if path == "" {
		return nil, "", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("PUBLISH_WEBHOOK_SECRET_FILE: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return nil, "", fmt.Errorf("PUBLISH_WEBHOOK_SECRET_FILE %s: empty", path)
	}
	return []byte(line), "PUBLISH_WEBHOOK_SECRET_FILE", nil
}

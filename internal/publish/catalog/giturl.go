package catalog

import (
	"net/url"
	"regexp"
	"strings"
)

// GitRepo is a git repository named by a catalog entry, in any of the forms
// the cdnjs catalog writes: "owner/repo", "https://github.com/owner/repo",
// "git://…", "git+https://…", "git+ssh://git@…", "ssh://git@…",
// "git@github.com:owner/repo.git" and "github:owner/repo".
type GitRepo struct {
	Host  string // lowercased, e.g. "github.com"
	Owner string
	Repo  string // without ".git"
}

// IsGitHub reports whether the repository is on GitHub, whose tag listing
// the git source uses.
func (r GitRepo) IsGitHub() bool { return r.Host == "github.com" || r.Host == "www.github.com" }

// Slug is "owner/repo".
func (r GitRepo) Slug() string { return r.Owner + "/" + r.Repo }

// WebURL is the repository's https page.
func (r GitRepo) WebURL() string { return "https://" + r.Host + "/" + r.Slug() }

var (
	ownerRepoPattern = regexp.MustCompile(`^([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$`)
	scpLikePattern   = regexp.MustCompile(`^(?:[A-Za-z0-9_.-]+@)?([A-Za-z0-9.-]+\.[A-Za-z]+):/?([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$`)
	pathSegment      = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// ParseGitRepo reads a git repository reference; ok is false for anything
// that does not name a host, an owner and a repository.
func ParseGitRepo(s string) (GitRepo, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return GitRepo{}, false
	}
	if rest, ok := strings.CutPrefix(s, "github:"); ok {
		s = rest
	}
	if m := ownerRepoPattern.FindStringSubmatch(s); m != nil && !strings.Contains(m[1], ".") {
		return GitRepo{Host: "github.com", Owner: m[1], Repo: m[2]}, true
	}
	if !strings.Contains(s, "://") {
		if m := scpLikePattern.FindStringSubmatch(s); m != nil {
			return GitRepo{Host: strings.ToLower(m[1]), Owner: m[2], Repo: m[3]}, true
		}
		if host, _, _ := strings.Cut(s, "/"); !bareHost.MatchString(host) {
			return GitRepo{}, false
		}
		s = "https://" + s // "github.com/owner/repo"
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return GitRepo{}, false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "git", "ssh", "git+https", "git+http", "git+ssh", "git+git":
	default:
		return GitRepo{}, false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 2 {
		return GitRepo{}, false
	}
	owner, repo := parts[0], strings.TrimSuffix(parts[1], ".git")
	if !pathSegment.MatchString(owner) || !pathSegment.MatchString(repo) || repo == "" {
		return GitRepo{}, false
	}
	return GitRepo{Host: strings.ToLower(u.Hostname()), Owner: owner, Repo: repo}, true
}

// GitHubTarget is the "owner/repo" whose tags a git-sourced library is
// listed from, in whatever form its target is written; ok is false when the
// target is not a GitHub repository.
func (a Autoupdate) GitHubTarget() (string, bool) {
	r, ok := ParseGitRepo(a.Target)
	if !ok || !r.IsGitHub() {
		return "", false
	}
	return r.Slug(), true
}

// RepositoryURL is a link to the library's repository for people: git
// forms become the host's https page; an http(s) URL is kept as written;
// anything else is "" (shown as text, never as a link).
func (p *Package) RepositoryURL() string {
	if p.Repository == nil {
		return ""
	}
	if isHTTPURL(p.Repository.URL) {
		return p.Repository.URL
	}
	if r, ok := ParseGitRepo(p.Repository.URL); ok {
		return r.WebURL()
	}
	return ""
}

// HomepageURL is the homepage as a link: an http(s) URL as written, a bare
// host name ("lib.example.app") as https, anything else "".
func (p *Package) HomepageURL() string {
	return homepageURL(p.Homepage)
}

func homepageURL(s string) string {
	if isHTTPURL(s) {
		return s
	}
	if bareHost.MatchString(s) {
		return "https://" + s
	}
	return ""
}

// bareHost is a host name, optionally with a path, written without a scheme.
var bareHost = regexp.MustCompile(`^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?:/[^\s]*)?$`)

package console

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/console/web"
)

// The pages sign in with the API's tokens, but their session cookie opens
// nothing under /api/v1: a script there must send the bearer token, so a
// page on another site cannot ride a signed-in browser into the API.
func TestSessionCookieDoesNotOpenTheAPI(t *testing.T) {
	srv, logs := newTestServer(t)
	jar, _ := cookiejar.New(nil)
	client := srv.Client()
	client.Jar = jar
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("GET /: no sign-in form:\n%s", page)
	}
	resp, err = client.PostForm(srv.URL+"/signin", url.Values{"csrf": {string(m[1])}, "token": {rwSecret}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(srv.URL)
	signedIn := false
	for _, c := range jar.Cookies(u) {
		signedIn = signedIn || c.Name == web.SessionCookie
	}
	if resp.StatusCode != http.StatusSeeOther || !signedIn {
		t.Fatalf("sign in: %d, session cookie %v", resp.StatusCode, signedIn)
	}
	for _, path := range []string{"/api/v1/waiting_rooms", "/api/v1/openapi.json"} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with the session cookie: %d, want 401", path, resp.StatusCode)
		}
	}
	if strings.Contains(logs.String(), rwSecret) {
		t.Error("the log holds the token's secret")
	}
}

package edge

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestWebIndex(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	resp := get(t, ts.URL+"/", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	page := string(resp.body)
	for _, name := range indexedNames(t) {
		if !strings.Contains(page, `href="/browse/`+name+`"`) {
			t.Errorf("index page does not link %s", name)
		}
	}
	if !strings.Contains(page, `id="search"`) || !regexp.MustCompile(`<script src="/_edge/static/app.js\?v=[0-9a-f]+" defer>`).MatchString(page) {
		t.Errorf("search box or script missing")
	}
	// Without JavaScript the form searches on the server.
	resp = get(t, ts.URL+"/?q=jqeury", nil)
	if !strings.Contains(string(resp.body), `href="/browse/jquery"`) || strings.Contains(string(resp.body), `href="/browse/testlib"`) {
		t.Errorf("server-side search for jqeury:\n%s", resp.body)
	}
}

func TestWebLibraryAndVersionPages(t *testing.T) {
	_, ts, _ := newTestEdge(t, nil)
	resp := get(t, ts.URL+"/browse/"+testLib, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("library page: %d", resp.StatusCode)
	}
	links := regexp.MustCompile(`href="/browse/testlib/([^"]+)"`).FindAllStringSubmatch(string(resp.body), -1)
	var order []string
	for _, l := range links {
		order = append(order, l[1])
	}
	// The "Latest" fact links the latest stable version first, then the list, newest first.
	want := []string{"2.1.0", "3.0.0-beta.1", "2.1.0", "2.0.0", "1.0.0"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("version links %v, want %v", order, want)
	}
	if strings.Contains(string(resp.body), testUnlisted) || strings.Contains(string(resp.body), "4.0.0") {
		t.Errorf("unpublished version listed")
	}

	resp = get(t, ts.URL+"/browse/"+testLib+"/"+testVersion, map[string]string{"Host": "cdn.test"})
	if resp.StatusCode != 200 {
		t.Fatalf("version page: %d", resp.StatusCode)
	}
	page := html.UnescapeString(string(resp.body))
	ver := testVersionDoc(t, testLib, testVersion)
	js, _ := ver.Lookup("testlib.js")
	css, _ := ver.Lookup("testlib.css")
	wantTags := []string{
		`<script src="http://cdn.test/ajax/libs/testlib/2.1.0/testlib.js" integrity="` + js.SRI + `" crossorigin="anonymous" referrerpolicy="no-referrer"></script>`,
		`<link rel="stylesheet" href="http://cdn.test/ajax/libs/testlib/2.1.0/testlib.css" integrity="` + css.SRI + `" crossorigin="anonymous" referrerpolicy="no-referrer" />`,
		`>http://cdn.test/ajax/libs/testlib/2.1.0/image.png<`,
	}
	for _, tag := range wantTags {
		if !strings.Contains(page, tag) {
			t.Errorf("version page lacks %s", tag)
		}
	}
	// The tags are shown as text, never as live markup.
	if strings.Contains(string(resp.body), `<script src="http://cdn.test`) {
		t.Errorf("a tag is rendered unescaped")
	}
	if strings.Count(page, `class="copy"`) != len(ver.Files) {
		t.Errorf("expected one Copy button per file")
	}

	resp = get(t, ts.URL+"/browse/"+testLib+"/2", nil)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/browse/testlib/2.1.0" {
		t.Errorf("range in a browse URL: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, u := range []string{"/browse/no-such-lib", "/browse/" + testLib + "/" + testUnlisted, "/browse/" + testLib + "/4.0.0"} {
		resp := get(t, ts.URL+u, nil)
		if resp.StatusCode != 404 || !strings.Contains(string(resp.body), "not found") {
			t.Errorf("%s: %d", u, resp.StatusCode)
		}
	}
}

func TestWebStaticAssets(t *testing.T) {
	s, ts, _ := newTestEdge(t, nil)
	for name, ct := range map[string]string{"style.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"} {
		a := s.web.static[name]
		resp := get(t, ts.URL+staticPrefix+name+"?v="+a.version, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ct || resp.Header.Get("Cache-Control") != immutableCacheControl || string(resp.body) != string(a.body) {
			t.Errorf("%s: status %d, headers %v", name, resp.StatusCode, resp.Header)
		}
		if resp := get(t, ts.URL+staticPrefix+name, nil); resp.Header.Get("Cache-Control") == immutableCacheControl {
			t.Errorf("%s without the version is cached forever", name)
		}
	}
	if resp := get(t, ts.URL+staticPrefix+"nope.js", nil); resp.StatusCode != 404 {
		t.Errorf("unknown asset: %d", resp.StatusCode)
	}
}

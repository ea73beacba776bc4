package console

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIListsExactlyTheRoutes holds the document and the server's
// routes equal, both ways, and checks the server serves the document.
func TestOpenAPIListsExactlyTheRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi: %q, want 3.x", doc.OpenAPI)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range New(Options{Tokens: testTokens(t)}).routes() {
		served = append(served, rt.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("the OpenAPI document and the routes differ:\ndocumented %q\nserved     %q", documented, served)
	}

	srv, _ := newTestServer(t)
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+roSecret)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != string(openAPI) {
		t.Errorf("GET /api/v1/openapi.json: %d, %d bytes; want 200 and the document", resp.StatusCode, len(body))
	}
}

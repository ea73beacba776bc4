package console

import (
	_ "embed"
	"net/http"
)

// openAPI is the API's OpenAPI 3 document, written by hand; a test holds
// its operations equal to the routes the server registers.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) (int, any, *ResultInfo, error) {
	// The document itself, not an envelope: tools read it as it is.
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
	return 0, nil, nil, errWritten
}

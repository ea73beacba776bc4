package e2echeck

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/andybalholm/brotli"
)

// Assets is what an edge lists for a version: its files and their SRI.
type Assets struct {
	Files []string          `json:"files"`
	SRI   map[string]string `json:"sri"`
}

var edgeClient = &http.Client{Timeout: 30 * time.Second}

// VersionAssets reads a version's listing from the edge: the status, and
// the listing when it is 200. A 404 (not published yet) is no error; any
// other answer, or a listing without files, is.
func VersionAssets(edge, name, version string) (int, Assets, error) {
	var a Assets
	resp, err := edgeClient.Get(edge + "/libraries/" + name + "/" + version)
	if err != nil {
		return 0, a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode == http.StatusNotFound {
			return resp.StatusCode, a, nil
		}
		return resp.StatusCode, a, fmt.Errorf("the edge answered %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return resp.StatusCode, a, err
	}
	if len(a.Files) == 0 {
		return resp.StatusCode, a, fmt.Errorf("listed with no files")
	}
	return resp.StatusCode, a, nil
}

// FetchFile gets a file from the edge in one Accept-Encoding (identity,
// gzip or br) and decodes it.
func FetchFile(edge, name, version, path, encoding string) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodGet, edge+"/ajax/libs/"+name+"/"+version+"/"+(&url.URL{Path: path}).EscapedPath(), nil)
	// Set explicitly, the client does not decode on its own: the check does.
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := edgeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Status: resp.StatusCode}
	}
	return Decode(resp.Header.Get("Content-Encoding"), body)
}

// Decode undoes a Content-Encoding.
func Decode(encoding string, body []byte) ([]byte, error) {
	switch encoding {
	case "", "identity":
		return body, nil
	case "br":
		return io.ReadAll(brotli.NewReader(bytes.NewReader(body)))
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	}
	return nil, fmt.Errorf("unknown Content-Encoding %q", encoding)
}

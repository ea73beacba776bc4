package payloadcodec

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/edgeflow/edgeflow/internal/keyring"
)

func ring(t *testing.T, ids ...string) *keyring.Keyring {
	t.Helper()
	var keys []keyring.Key
	for _, id := range ids {
		k, err := keyring.Generate(id)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const secretValue = "s3cr3t-Value-that-must-not-show"

func TestCodecEncryptsAndRotates(t *testing.T) {
	k1, _ := keyring.Generate("k1")
	old, err := keyring.New(k1)
	if err != nil {
		t.Fatal(err)
	}
	c := Codec{Keys: old}
	dc := c.DataConverter()
	p, err := dc.ToPayload(map[string]string{"password": secretValue})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p.Data, []byte(secretValue)) || bytes.Contains(p.Data, []byte("password")) {
		t.Fatal("the encoded payload holds the plaintext")
	}
	if string(p.Metadata[converter.MetadataEncoding]) != Encoding || string(p.Metadata[MetadataKeyID]) != "k1" {
		t.Fatalf("metadata %v", p.Metadata)
	}
	var back map[string]string
	if err := dc.FromPayload(p, &back); err != nil || back["password"] != secretValue {
		t.Fatalf("%v %v", back, err)
	}
	// Rotation: a new key first seals; the old one still opens old payloads.
	k2, _ := keyring.Generate("k2")
	rotated, err := keyring.New(k2, k1)
	if err != nil {
		t.Fatal(err)
	}
	rc := Codec{Keys: rotated}.DataConverter()
	if err := rc.FromPayload(p, &back); err != nil || back["password"] != secretValue {
		t.Fatalf("the rotated keyring cannot open an old payload: %v", err)
	}
	p2, _ := rc.ToPayload("new")
	if string(p2.Metadata[MetadataKeyID]) != "k2" {
		t.Errorf("sealed with %s, want the new primary k2", p2.Metadata[MetadataKeyID])
	}
	// Without the key: a clear error naming the keys at hand.
	var s string
	err = Codec{Keys: ring(t, "other")}.DataConverter().FromPayload(p2, &s)
	if err == nil || !strings.Contains(err.Error(), "other") {
		t.Errorf("error %v", err)
	}
	// Plain payloads (history from before the codec) pass through.
	plain, _ := converter.GetDefaultDataConverter().ToPayload("plain")
	if err := rc.FromPayload(plain, &s); err != nil || s != "plain" {
		t.Errorf("plain payload: %q %v", s, err)
	}
}

func post(t *testing.T, h http.Handler, path string, header map[string]string, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestServerDecodesForTheUIOnly(t *testing.T) {
	c := Codec{Keys: ring(t, "k1")}
	enc, err := c.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"` + secretValue + `"`)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"payloads": []map[string]any{{"metadata": enc[0].Metadata, "data": enc[0].Data}}})
	ui := "http://127.0.0.1:8233"
	open := Server(c, ServerOptions{UIOrigins: []string{ui}})

	rec := post(t, open, "/default/decode", map[string]string{"Origin": ui, "X-Namespace": "default"}, string(body))
	out, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || !strings.Contains(string(out), "InMzY3IzdC1WYWx1ZS10aGF0LW11c3Qtbm90LXNob3ci") || rec.Header().Get("Access-Control-Allow-Origin") != ui {
		t.Fatalf("decode: %d %s %v", rec.Code, out, rec.Header())
	}
	// Preflight from the UI; any other origin is refused without CORS headers.
	req := httptest.NewRequest(http.MethodOptions, "/decode", nil)
	req.Header.Set("Origin", ui)
	pre := httptest.NewRecorder()
	open.ServeHTTP(pre, req)
	if pre.Code != http.StatusNoContent || !strings.Contains(pre.Header().Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight %d %v", pre.Code, pre.Header())
	}
	evil := post(t, open, "/decode", map[string]string{"Origin": "http://evil.example"}, string(body))
	if evil.Code != http.StatusForbidden || evil.Header().Get("Access-Control-Allow-Origin") != "" || strings.Contains(evil.Body.String(), "payloads") {
		t.Errorf("other origin: %d %v %s", evil.Code, evil.Header(), evil.Body)
	}
	// A token that cannot be checked is refused.
	if r := post(t, open, "/decode", map[string]string{"Authorization": "Bearer x"}, string(body)); r.Code != http.StatusUnauthorized {
		t.Errorf("unchecked token: %d", r.Code)
	}

	// With tokens: required and checked.
	guarded := Server(c, ServerOptions{UIOrigins: []string{ui}, Tokens: []string{"t0ken"}})
	for hdr, want := range map[string]int{"": 401, "Bearer wrong": 401, "t0ken": 401, "Bearer t0ken": 200} {
		h := map[string]string{"Origin": ui}
		if hdr != "" {
			h["Authorization"] = hdr
		}
		if r := post(t, guarded, "/decode", h, string(body)); r.Code != want {
			t.Errorf("Authorization %q: %d, want %d (%s)", hdr, r.Code, want, r.Body)
		}
	}
	// Encode answers ciphertext.
	plain, _ := json.Marshal(map[string]any{"payloads": []map[string]any{{"metadata": map[string][]byte{"encoding": []byte("json/plain")}, "data": []byte(`"` + secretValue + `"`)}}})
	r := post(t, open, "/encode", nil, string(plain))
	if r.Code != 200 || !strings.Contains(r.Body.String(), "YmluYXJ5L2VuY3J5cHRlZA") { // base64 of binary/encrypted
		t.Errorf("encode: %d %s", r.Code, r.Body)
	}
}

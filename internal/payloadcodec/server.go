package payloadcodec

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"go.temporal.io/sdk/converter"
)

// MaxRequestBytes bounds a request to the codec server: a few payloads of
// Temporal's 2 MB limit, base64 in JSON.
const MaxRequestBytes = 16 << 20

// ServerOptions secure the codec server.
type ServerOptions struct {
	// UIOrigins are the Web UI origins (scheme://host:port) browsers may
	// call from; every other origin gets no CORS headers and a 403.
	UIOrigins []string
	// Tokens, when set, are the access tokens a caller must send as
	// "Authorization: Bearer <token>" (the Web UI's "pass access token",
	// the CLI's --codec-auth). Without tokens no caller may send one: a
	// token that cannot be checked is refused, not ignored.
	Tokens []string
}

// Server is the codec server: POST /encode and /decode (also under a
// namespace prefix, /default/decode, as the UI may call them), the
// payloads as JSON ({"payloads":[…]}), the answer the same. It serves
// exactly what Codec does, with CORS for the UI's origins only and the
// access token checked.
func Server(c Codec, o ServerOptions) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			if !allowed(o.UIOrigins, origin) {
				http.Error(w, "origin "+origin+" may not call this codec server", http.StatusForbidden)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			h.Set("Access-Control-Max-Age", "600")
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if r.URL.Path == "/healthz" && r.Method == http.MethodGet {
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		if msg := checkToken(o.Tokens, r.Header.Get("Authorization")); msg != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="codec"`)
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/encode") && !strings.HasSuffix(r.URL.Path, "/decode") {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST, OPTIONS")
			http.Error(w, "POST the payloads", http.StatusMethodNotAllowed)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
		w.Header().Set("Cache-Control", "no-store")
		codec.ServeHTTP(w, r)
	})
}

func allowed(origins []string, origin string) bool {
	for _, o := range origins {
		if strings.EqualFold(strings.TrimRight(o, "/"), origin) {
			return true
		}
	}
	return false
}

// checkToken says why a request's Authorization is refused ("" when not).
func checkToken(tokens []string, header string) string {
	if header == "" {
		if len(tokens) > 0 {
			return "an access token is required (Authorization: Bearer …)"
		}
		return ""
	}
	if len(tokens) == 0 {
		return "this codec server checks no access tokens (set CODEC_SERVER_TOKENS), so it accepts none"
	}
	got, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return "the access token must be sent as Authorization: Bearer …"
	}
	for _, t := range tokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(t)) == 1 {
			return ""
		}
	}
	return "the access token is not valid here"
}

package console

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// signinCookie is the cookie GET / sets for its sign-in form, through h.
func signinCookie(t *testing.T, h http.Handler, peer string, header http.Header) *http.Cookie {
	t.Helper()
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = peer
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == "edgeflow-console-signin" {
			return c
		}
	}
	t.Fatalf("no sign-in cookie in %v", rec.Result().Header["Set-Cookie"])
	return nil
}

func TestCookieSecureBehindATrustedProxy(t *testing.T) {
	h := New(Options{Tokens: testTokens(t), TrustForwarded: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}).Handler()
	https := http.Header{"X-Forwarded-Proto": {"https"}}
	if c := signinCookie(t, h, "10.1.2.3:5000", https); !c.Secure {
		t.Error("behind a trusted proxy saying https: the cookie is not Secure")
	}
	// A client's own X-Forwarded-Proto before the proxy's: the proxy's, the last, counts.
	if c := signinCookie(t, h, "10.1.2.3:5000", http.Header{"X-Forwarded-Proto": {"https, http"}}); c.Secure {
		t.Error("a trusted proxy saying http after a client's https: the cookie is Secure")
	}
	if c := signinCookie(t, h, "192.0.2.1:5000", https); c.Secure {
		t.Error("an untrusted peer's X-Forwarded-Proto was believed: the cookie is Secure over plain HTTP")
	}
	if c := signinCookie(t, h, "10.1.2.3:5000", nil); c.Secure {
		t.Error("a trusted proxy without X-Forwarded-Proto: the cookie is Secure")
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8,")
	if err != nil || len(got) != 3 || got[1] != netip.MustParsePrefix("192.0.2.7/32") {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8,proxy.local"); err == nil || !strings.Contains(err.Error(), `--trust-forwarded: "proxy.local"`) {
		t.Errorf("a host name: got %v, want an error naming the flag and the entry", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "console test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestConsoleServesTLSFromEnv(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	env := map[string]string{"CONSOLE_TLS_CERT": certFile, "CONSOLE_TLS_KEY": keyFile}
	conf, err := TLSFromEnv(func(k string) string { return env[k] })
	if err != nil || conf == nil {
		t.Fatalf("TLSFromEnv: %v, %v", conf, err)
	}
	ln, err := Listen("127.0.0.1:0", conf)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(Options{Tokens: testTokens(t)}).Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var secure bool
	for _, c := range resp.Cookies() {
		secure = secure || (c.Name == "edgeflow-console-signin" && c.Secure)
	}
	if !secure {
		t.Errorf("over the console's own TLS, the sign-in cookie is not Secure: %v", resp.Header["Set-Cookie"])
	}

	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CONSOLE_TLS_CERT": certFile}, "CONSOLE_TLS_KEY: not set"},
		{map[string]string{"CONSOLE_TLS_KEY": keyFile}, "CONSOLE_TLS_CERT: not set"},
		{map[string]string{"CONSOLE_TLS_CERT": keyFile, "CONSOLE_TLS_KEY": keyFile}, "CONSOLE_TLS_CERT/CONSOLE_TLS_KEY"},
	} {
		if _, err := TLSFromEnv(func(k string) string { return c.env[k] }); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.env, err, c.want)
		}
	}
	if conf, err := TLSFromEnv(func(string) string { return "" }); conf != nil || err != nil {
		t.Errorf("neither set: got %v, %v; want plain HTTP", conf, err)
	}
}

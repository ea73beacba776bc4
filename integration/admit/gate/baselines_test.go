package gate

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/edgeflow/edgeflow/internal/testenv/loadtest"
)

// The processes BenchmarkGateOutOfProcess compares the gate with: nginx
// (Debian's, `make bench` installs it) and a plain httputil.ReverseProxy
// of ours (testdata/plainproxy), each its own process.

// nginxConf serves page on every path (the origin) and proxies to it (the
// baseline), keep-alive both ways; loadtest.NginxPreamble is its start.
const nginxConf = `%[1]s
events { worker_connections 4096; }
http {
	access_log off;
	%[5]s
	keepalive_requests 1000000;
	upstream origin {
		server 127.0.0.1:%[3]d;
		keepalive 256;
	}
	server {
		listen 127.0.0.1:%[3]d;
		location / {
			root %[2]s/www;
			default_type text/html;
			try_files /page.html =404;
		}
	}
	server {
		listen 127.0.0.1:%[4]d;
		location / {
			proxy_pass http://origin;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host $host;
		}
	}
}
`

// nginxServer is a running nginx: the static origin and the proxy to it.
type nginxServer struct {
	Origin, Proxy string // http://127.0.0.1:port
}

// startNginx runs nginx in dir serving page until the benchmark ends.
func startNginx(b *testing.B, bin, dir string, page []byte) (*nginxServer, error) {
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(www, "page.html"), page, 0o644); err != nil {
		return nil, err
	}
	main, httpPaths := loadtest.NginxPreamble(dir)
	ports, err := loadtest.StartNginx(b, bin, dir, 2, func(ports []int) []byte {
		return fmt.Appendf(nil, nginxConf, main, dir, ports[0], ports[1], httpPaths)
	})
	if err != nil {
		return nil, err
	}
	return &nginxServer{Origin: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), Proxy: fmt.Sprintf("http://127.0.0.1:%d", ports[1])}, nil
}

// startPlain runs testdata/plainproxy with args until the benchmark ends
// and returns its URL.
func startPlain(b *testing.B, bin string, args ...string) string {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		b.Fatalf("plainproxy %v: %q %v", args, line, err)
	}
	return "http://" + addr
}

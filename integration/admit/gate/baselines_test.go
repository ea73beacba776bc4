package gate

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The processes BenchmarkGateOutOfProcess compares the gate with: nginx
// (Debian's, `make bench` installs it) and a plain httputil.ReverseProxy
// of ours (testdata/plainproxy), each its own process.

// nginxBinary is Debian's nginx, or "" when it is not installed.
func nginxBinary() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx" // not on a non-root PATH
	}
	return ""
}

// nginxConf serves page on every path (the origin) and proxies to it (the
// baseline), one worker like the measurement, keep-alive both ways,
// everything it writes in dir: never the system nginx's files.
const nginxConf = `daemon off;
master_process on;
worker_processes 1;
%[1]s
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path %[2]s/client_body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
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

// errPortTaken is an nginx that could not bind the ports it was given.
var errPortTaken = errors.New("nginx: a port was taken")

// startNginx runs nginx in dir serving page until the benchmark ends. nginx
// cannot bind port 0 and say which it got, so it is given two free ports;
// if another process takes one first, it starts again on others.
func startNginx(b *testing.B, bin, dir string, page []byte) (*nginxServer, error) {
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(www, "page.html"), page, 0o644); err != nil {
		return nil, err
	}
	user := ""
	if os.Getuid() == 0 {
		user = "user root;" // workers read the temp dir (0700) as the master does
	}
	for attempt := 0; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		conf := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, user, dir, ports[0], ports[1]), 0o644); err != nil {
			return nil, err
		}
		s := &nginxServer{Origin: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), Proxy: fmt.Sprintf("http://127.0.0.1:%d", ports[1])}
		err = runNginx(b, bin, dir, conf, ports)
		if errors.Is(err, errPortTaken) && attempt < 5 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

func runNginx(b *testing.B, bin, dir, conf string, ports []int) error {
	logPath := filepath.Join(dir, "error.log")
	_ = os.Remove(logPath)
	// -e: the error log before the config is read, which would otherwise
	// be the system's.
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", logPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(filepath.Join(dir, "nginx.out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			logs, _ := os.ReadFile(logPath)
			more, _ := os.ReadFile(filepath.Join(dir, "nginx.out"))
			if strings.Contains(string(logs)+string(more), "Address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("nginx exited:\n%s%s", logs, more)
		default:
		}
		if listens(ports[0]) && listens(ports[1]) {
			b.Cleanup(stop)
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("nginx did not listen within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func listens(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// freePorts are ports nothing listens on now (for nginx, which cannot be
// given port 0).
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
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

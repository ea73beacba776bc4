package loadtest

import (
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

// NginxBinary is Debian's nginx, or "" when it is not installed.
func NginxBinary() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx" // not on a non-root PATH
	}
	return ""
}

// NginxModule is the path of one of Debian's dynamic nginx modules (e.g.
// "ngx_http_brotli_static_module", package libnginx-mod-http-brotli-static),
// or "" when it is not installed.
func NginxModule(name string) string {
	p := filepath.Join("/usr/lib/nginx/modules", name+".so")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// NginxPreamble is the start of a config for StartNginx: the main context
// that keeps nginx in the foreground with its pid and logs in dir (never
// the system nginx's files), one worker like the issues' measurements,
// and the temp paths of the http context (to be put inside it).
func NginxPreamble(dir string) (main, httpPaths string) { return NginxPreambleWorkers(dir, "1") }

// NginxPreambleWorkers is NginxPreamble with worker_processes workers
// ("auto": one per core, Debian's default).
func NginxPreambleWorkers(dir, workers string) (main, httpPaths string) {
	user := ""
	if os.Getuid() == 0 {
		user = "user root;\n" // workers read the temp dir (0700) as the master does
	}
	main = fmt.Sprintf("daemon off;\nmaster_process on;\nworker_processes %s;\n%spid %s/nginx.pid;\nerror_log %[3]s/error.log warn;\n", workers, user, dir)
	httpPaths = fmt.Sprintf("client_body_temp_path %[1]s/client_body;\nproxy_temp_path %[1]s/proxy;\nfastcgi_temp_path %[1]s/fastcgi;\n"+
		"uwsgi_temp_path %[1]s/uwsgi;\nscgi_temp_path %[1]s/scgi;\n", dir)
	return main, httpPaths
}

// errPortTaken is an nginx that could not bind the ports it was given.
var errPortTaken = errors.New("nginx: a port was taken")

// StartNginx runs nginx (bin) in dir until tb ends, with the config conf
// returns for n free ports, and returns those ports once it listens on
// all. nginx cannot bind port 0 and say which it got, so it is given free
// ports; if another process takes one first, it starts again on others.
func StartNginx(tb testing.TB, bin, dir string, n int, conf func(ports []int) []byte) ([]int, error) {
	for attempt := 0; ; attempt++ {
		ports, err := FreePorts(n)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(path, conf(ports), 0o644); err != nil {
			return nil, err
		}
		err = runNginx(tb, bin, dir, path, ports)
		if errors.Is(err, errPortTaken) && attempt < 5 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return ports, nil
	}
}

func runNginx(tb testing.TB, bin, dir, conf string, ports []int) error {
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
	defer func() { _ = out.Close() }()
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
		if allListen(ports) {
			tb.Cleanup(stop)
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("nginx did not listen within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allListen(ports []int) bool {
	for _, port := range ports {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return false
		}
		c.Close()
	}
	return true
}

// FreePorts are ports nothing listens on now (for nginx, which cannot be
// given port 0).
func FreePorts(n int) ([]int, error) {
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

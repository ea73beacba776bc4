package devstack

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"
)

// TemporalOptions configures the dev server. Zero ports mean free ports.
type TemporalOptions struct {
	Bin       string // default FindTool("temporal")
	DBFile    string // empty: in memory
	IP        string // default 127.0.0.1
	Port      int
	UIPort    int
	Headless  bool // no Web UI
	Namespace string
	// UICodecEndpoint is the codec server the Web UI decodes payloads with
	// (payloadcodec.Server); empty: none.
	UICodecEndpoint string
	Logs            io.Writer
}

// Temporal is a running dev server.
type Temporal struct {
	*Process
	HostPort  string
	UIURL     string
	Namespace string
}

// StartTemporal starts the dev server, waits until it serves, and registers
// the search attributes of every product. Ports it chooses itself are
// chosen again if the server cannot bind them.
func StartTemporal(ctx context.Context, o TemporalOptions) (*Temporal, error) {
	var err error
	if o.Bin == "" {
		if o.Bin, err = FindTool("temporal"); err != nil {
			return nil, err
		}
	}
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	attrs, err := SearchAttributes()
	if err != nil {
		return nil, err
	}
	// Its HTTP and metrics ports are always chosen here: a start can always
	// be tried again.
	return startServer(ctx, "temporal dev server", true, func() (*Temporal, error) { return startTemporalOnce(ctx, o, attrs) })
}

func startTemporalOnce(ctx context.Context, o TemporalOptions, attrs map[string]string) (*Temporal, error) {
	var err error
	if o.Port, err = freePortOr(o.Port); err != nil {
		return nil, err
	}
	httpPort, err := choosePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := choosePort()
	if err != nil {
		return nil, err
	}
	args := []string{"server", "start-dev",
		"--ip", o.IP, "--port", strconv.Itoa(o.Port),
		"--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort),
		"--namespace", o.Namespace, "--log-level", "warn",
	}
	if o.DBFile != "" {
		args = append(args, "--db-filename", o.DBFile)
	}
	if o.Headless {
		args = append(args, "--headless")
	} else {
		if o.UIPort, err = freePortOr(o.UIPort); err != nil {
			return nil, err
		}
		args = append(args, "--ui-port", strconv.Itoa(o.UIPort))
		if o.UICodecEndpoint != "" {
			args = append(args, "--ui-codec-endpoint", o.UICodecEndpoint)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		args = append(args, "--search-attribute", name+"="+attrs[name])
	}
	p, err := start("temporal", exec.Command(o.Bin, args...), o.Logs)
	if err != nil {
		return nil, err
	}
	t := &Temporal{Process: p, HostPort: net.JoinHostPort(o.IP, strconv.Itoa(o.Port)), Namespace: o.Namespace}
	if !o.Headless {
		t.UIURL = fmt.Sprintf("http://%s:%d", o.IP, o.UIPort)
	}
	if err := t.waitReady(ctx, o.Port); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, err
	}
	return t, nil
}

func (t *Temporal) waitReady(ctx context.Context, port int) error {
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if exited, err := t.Exited(); exited {
			return t.failed("temporal dev server on %s exited during start: %v", t.HostPort, err)
		}
		c, err := client.Dial(client.Options{HostPort: t.HostPort, Namespace: t.Namespace, Logger: quietLogger{}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				if !listensOn(t.cmd.Process.Pid, port) {
					return t.failed("another process answers on %s, the port the temporal dev server was to bind", t.HostPort)
				}
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("temporal dev server at %s not ready after 90s: %v\n--- its last log lines ---\n%s", t.HostPort, last, t.log.String())
}

package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeflow/edgeflow/internal/objectstore"
	"github.com/edgeflow/edgeflow/internal/objectstore/s3"
)

// DistributedMinIOOptions configures MinIO in distributed mode: Nodes
// server processes on loopback, one drive each, one erasure set.
type DistributedMinIOOptions struct {
	Bin                  string
	Dir                  string // node i's drive is Dir/node<i>
	Nodes                int    // 4
	AccessKey, SecretKey string
	Logs                 func(name string) io.Writer
}

// DistributedMinIO is the running nodes and the load balancer in front of
// them, which is the S3 endpoint every client uses.
type DistributedMinIO struct {
	o        DistributedMinIOOptions
	ports    []int // S3 port of each node
	consoles []int
	args     []string // the node list every node is started with
	mu       sync.Mutex
	nodes    []*Process
	lb       *balancer
	Endpoint string // the balancer: host:port
}

// StartDistributedMinIO starts every node at once (each waits for the
// others to form the erasure set) and waits until each reports the
// cluster healthy, then starts the balancer.
func StartDistributedMinIO(ctx context.Context, o DistributedMinIOOptions) (*DistributedMinIO, error) {
	var err error
	if o.Bin == "" {
		if o.Bin, err = FindTool("minio"); err != nil {
			return nil, err
		}
	}
	if o.Nodes < 4 {
		return nil, fmt.Errorf("minio: %d nodes; distributed mode with one erasure set wants 4 or more", o.Nodes)
	}
	m := &DistributedMinIO{o: o, nodes: make([]*Process, o.Nodes)}
	for i := range o.Nodes {
		port, err := choosePort()
		if err != nil {
			return nil, err
		}
		console, err := choosePort()
		if err != nil {
			return nil, err
		}
		m.ports = append(m.ports, port)
		m.consoles = append(m.consoles, console)
		drive := filepath.Join(o.Dir, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(drive, 0o755); err != nil {
			return nil, err
		}
		m.args = append(m.args, fmt.Sprintf("http://127.0.0.1:%d%s", port, drive))
	}
	for i := range o.Nodes {
		if err := m.StartNode(i); err != nil {
			m.Stop()
			return nil, err
		}
	}
	for i := range o.Nodes {
		if err := m.WaitNode(ctx, i, 2*time.Minute); err != nil {
			m.Stop()
			return nil, err
		}
	}
	var addrs []string
	for _, p := range m.ports {
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	if m.lb, err = newBalancer(addrs); err != nil {
		m.Stop()
		return nil, err
	}
	m.Endpoint = m.lb.addr
	return m, nil
}

// NodeName is node i's name: minio1 … minio4, as in MinIO's own
// distributed docker-compose examples.
func NodeName(i int) string { return fmt.Sprintf("minio%d", i+1) }

// NodeEndpoint is node i's own S3 address.
func (m *DistributedMinIO) NodeEndpoint(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.ports[i]))
}

// StartNode starts node i (again, after StopNode) on its ports and drive.
func (m *DistributedMinIO) StartNode(i int) error {
	cmd := exec.Command(m.o.Bin, append([]string{"server", "--quiet",
		"--address", m.NodeEndpoint(i), "--console-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(m.consoles[i]))}, m.args...)...)
	// MINIO_CI_CD: the drives are directories on the root file system,
	// which MinIO otherwise refuses in distributed mode.
	// _MINIO_SERVER_LOCAL: in a container (/.dockerenv) MinIO waits for
	// every node's host to resolve to a non-loopback address, which
	// 127.0.0.1 never does; this names the node's own endpoint instead.
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+m.o.AccessKey, "MINIO_ROOT_PASSWORD="+m.o.SecretKey,
		"MINIO_CI_CD=on", "_MINIO_SERVER_LOCAL="+m.NodeEndpoint(i), "MINIO_BROWSER_REDIRECT=off", "MINIO_UPDATE=off", "MINIO_CALLHOME_ENABLE=off")
	p, err := start(NodeName(i), cmd, m.o.Logs(NodeName(i)))
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.nodes[i] = p
	m.mu.Unlock()
	return nil
}

// WaitNode waits until node i answers that the cluster has write quorum.
func (m *DistributedMinIO) WaitNode(ctx context.Context, i int, within time.Duration) error {
	m.mu.Lock()
	p := m.nodes[i]
	m.mu.Unlock()
	deadline := time.Now().Add(within)
	url := "http://" + m.NodeEndpoint(i) + "/minio/health/cluster"
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%s exited during start: %v\n--- its last log lines ---\n%s", p.Name, err, p.log.String())
		}
		if resp, err := healthClient.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s at %s: cluster not healthy after %s\n--- its last log lines ---\n%s", p.Name, m.NodeEndpoint(i), within, p.log.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitRejoined waits, after a node started again, until the cluster is
// whole: every node sees every other node's drive online and none healing
// (it answers /minio/health/cluster?maintenance=true with 200: the cluster
// would keep write quorum without it), and a probe object is written to
// bucket and removed through each node's own endpoint. A restarted node
// answers healthy long before its peers reconnect to it (make cluster-test
// saw 10–15 s on an idle machine): meanwhile writes through the balancer
// may get 503 SlowDownWrite ("Resource requested is unwritable"), reads of
// objects written while it was away may get NoSuchKey, and stopping
// another node would leave objects on fewer drives than they need. It
// fails after within, naming the node and its last answer, or at once on
// an answer that waiting will not change (a missing bucket, refused
// credentials).
func (m *DistributedMinIO) WaitRejoined(ctx context.Context, bucket string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for i := range m.o.Nodes {
		url := "http://" + m.NodeEndpoint(i) + "/minio/health/cluster?maintenance=true"
		for {
			status := 0
			if resp, err := healthClient.Get(url); err == nil {
				resp.Body.Close()
				status = resp.StatusCode
			}
			if status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("minio: %s at %s does not see every other node's drive online (or one still heals) %s after a node started again: /minio/health/cluster?maintenance=true answered %d",
					NodeName(i), m.NodeEndpoint(i), within, status)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	for i := range m.o.Nodes {
		store, err := s3.New(s3.Config{Endpoint: m.NodeEndpoint(i), AccessKey: m.o.AccessKey, SecretKey: m.o.SecretKey, MaxRetries: 1})
		if err != nil {
			return err
		}
		key := ".edgeflow-probe/" + NodeName(i)
		for {
			err := objectstore.PutBytes(ctx, store, bucket, key, []byte(NodeName(i)), objectstore.PutOptions{})
			if err == nil {
				err = store.Delete(ctx, bucket, key)
			}
			if err == nil {
				break
			}
			if !objectstore.IsTransient(err) {
				return fmt.Errorf("minio: probe write through %s: %w", NodeName(i), err)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("minio: %s at %s still refuses writes %s after a node started again: %w", NodeName(i), m.NodeEndpoint(i), within, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return nil
}

// StopNode stops node i (SIGINT, then SIGKILL): one node of the four away.
func (m *DistributedMinIO) StopNode(i int) error {
	m.mu.Lock()
	p := m.nodes[i]
	m.mu.Unlock()
	return p.Stop(10 * time.Second)
}

// Node is node i's current process.
func (m *DistributedMinIO) Node(i int) *Process {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodes[i]
}

// Stop stops the balancer and every node.
func (m *DistributedMinIO) Stop() {
	if m.lb != nil {
		m.lb.close()
	}
	m.mu.Lock()
	nodes := append([]*Process(nil), m.nodes...)
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range nodes {
		if p != nil {
			wg.Add(1)
			go func() { defer wg.Done(); _ = p.Stop(20 * time.Second) }()
		}
	}
	wg.Wait()
}

// balancer is the TCP load balancer a deployment puts in front of MinIO's
// nodes: each connection goes to the next node that accepts it, so a
// stopped node costs its open connections and nothing more.
type balancer struct {
	ln    net.Listener
	addr  string
	nodes []string
	next  atomic.Uint64
	wg    sync.WaitGroup
}

func newBalancer(nodes []string) (*balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &balancer{ln: ln, addr: ln.Addr().String(), nodes: nodes}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

func (b *balancer) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go b.relay(c)
	}
}

func (b *balancer) relay(c net.Conn) {
	defer c.Close()
	first := int(b.next.Add(1))
	var up net.Conn
	for k := range b.nodes {
		var err error
		if up, err = net.DialTimeout("tcp", b.nodes[(first+k)%len(b.nodes)], time.Second); err == nil {
			break
		}
	}
	if up == nil {
		return // every node refused: the client sees a reset, as from a load balancer
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func (b *balancer) close() { _ = b.ln.Close() }

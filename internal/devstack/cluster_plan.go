package devstack

import "slices"

// ClusterProcess is one process `make cluster` runs: its name, the
// docker-compose.yml service that runs it in a deployment (a service with
// replicas runs NAME-1, NAME-2, as Compose names its containers), its
// binary in bin/ (products only), and its environment (NAME=value).
// deploy/compose_test.go holds docker-compose.yml to this plan.
type ClusterProcess struct {
	Name, Service, Bin string
	Env                []string
}

// clusterAddrs are the addresses the products' environment names.
type clusterAddrs struct {
	temporal, namespace, s3, accessKey, secretKey string
	codecKeysFile, cookieKeysFile, catalogDir     string
	redis                                         map[string]string // dc1, dc2, anywhere → URL
	free                                          func() (string, error)
}

// ClusterInfrastructure are the processes the products run on, in the
// order they start (each its own docker-compose.yml service).
func ClusterInfrastructure() []string {
	out := []string{"postgresql"}
	for _, s := range TemporalServices {
		out = append(out, "temporal-"+s)
	}
	out = append(out, "temporal-ui")
	for i := range 4 {
		out = append(out, NodeName(i))
	}
	for _, r := range append(slices.Clone(DataCenters), "anywhere") {
		out = append(out, "redis-"+r)
	}
	return out
}

// ClusterPlan is every process of `make cluster`, infrastructure first,
// with the products' environment as docker-compose names it (service
// addresses in place of the free ports `make cluster` picks), so the deploy
// tests can hold the two topologies together.
func ClusterPlan() []ClusterProcess {
	var out []ClusterProcess
	for _, name := range ClusterInfrastructure() {
		out = append(out, ClusterProcess{Name: name, Service: name})
	}
	a := clusterAddrs{temporal: "temporal-frontend:7233", namespace: "default", s3: "minio1:9000", redis: map[string]string{},
		codecKeysFile: "/keys/codec.keys", cookieKeysFile: "/keys/gate-cookie.keys", catalogDir: "/catalog",
		free: func() (string, error) { return "0.0.0.0:0", nil }}
	for _, r := range append(slices.Clone(DataCenters), "anywhere") {
		a.redis[r] = "redis://redis-" + r + ":6379/0"
	}
	procs, _ := productProcesses(a) // only free() can fail, and this one does not
	return append(out, procs...)
}

// productProcesses lays out the products: ClusterProcessesPerPool of each
// worker pool, and per data center an edge and two gates in front of it,
// each data center's gates on its Redis and all on the Anywhere one.
func productProcesses(a clusterAddrs) ([]ClusterProcess, error) {
	temporal := []string{"TEMPORAL_ADDRESS=" + a.temporal, "TEMPORAL_NAMESPACE=" + a.namespace}
	s3 := []string{"S3_ENDPOINT=" + a.s3, "S3_ACCESS_KEY=" + a.accessKey, "S3_SECRET_KEY=" + a.secretKey}
	var out []ClusterProcess
	for _, q := range TaskQueues() {
		for i := 1; i <= ClusterProcessesPerPool; i++ {
			health, err := a.free()
			if err != nil {
				return nil, err
			}
			env := append(slices.Clone(temporal), "HEALTH_ADDR="+health, "LOG_FORMAT=json")
			switch q {
			case "publish":
				env = append(env, s3...)
				env = append(env, "CATALOG_DIR="+a.catalogDir)
			case "compress":
				env = append(env, s3...)
			case "migrate":
				// Its job store is on the S3 store; the jobs' credentials
				// are sealed with the codec keys.
				env = append(env, s3...)
				env = append(env, "CODEC_KEYS_FILE="+a.codecKeysFile)
			}
			out = append(out, ClusterProcess{Name: InstanceName(q, i), Service: q, Bin: q, Env: env})
		}
	}
	for _, dc := range DataCenters {
		edgeAddr, err := a.free()
		if err != nil {
			return nil, err
		}
		metrics, err := a.free()
		if err != nil {
			return nil, err
		}
		edge := "edge-" + dc
		out = append(out, ClusterProcess{Name: edge, Service: edge, Bin: "edge",
			Env: append(slices.Clone(s3), "EDGE_ADDR="+edgeAddr, "EDGE_METRICS_ADDR="+metrics)})
		for g := 1; g <= 2; g++ {
			addr, err := a.free()
			if err != nil {
				return nil, err
			}
			health, err := a.free()
			if err != nil {
				return nil, err
			}
			service := "gate-" + dc
			out = append(out, ClusterProcess{Name: InstanceName(service, g), Service: service, Bin: "gate",
				Env: append(slices.Clone(temporal), "GATE_ADDR="+addr, "GATE_HEALTH_ADDR="+health,
					"GATE_ORIGIN=http://"+edgeAddr, "GATE_DATA_CENTER="+dc,
					"GATE_REDIS_URL="+a.redis[dc], "GATE_ANYWHERE_REDIS_URL="+a.redis["anywhere"],
					"GATE_COOKIE_KEYS_FILE="+a.cookieKeysFile, "GATE_HOSTS=127.0.0.1,localhost", "LOG_FORMAT=json")})
		}
	}
	return out, nil
}

// envValue is NAME's value in env (NAME=value entries).
func envValue(env []string, name string) string {
	for _, e := range slices.Backward(env) {
		if len(e) > len(name) && e[:len(name)+1] == name+"=" {
			return e[len(name)+1:]
		}
	}
	return ""
}

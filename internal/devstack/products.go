package devstack

import (
	"github.com/edgeflow/edgeflow/internal/product"
	admit "github.com/edgeflow/edgeflow/workflows/admit/contract"
	migrate "github.com/edgeflow/edgeflow/workflows/migrate/contract"
	publish "github.com/edgeflow/edgeflow/workflows/publish/contract"
)

// Products are the contracts of every product, one line each: the dev
// server registers their search attributes, `make run` starts a worker pool
// per task queue (workers/<queue>), and deploy/ checks the compose file and
// temporal-setup.sh against them.
var Products = []product.Contract{
	publish.Product,
	migrate.Product,
	admit.Product,
}

// SearchAttributes are the custom search attributes of every product, name
// to type, registered on the dev server at start.
func SearchAttributes() (map[string]string, error) {
	return product.SearchAttributeTypes(Products...)
}

// TaskQueues are the task queues of every product, in order.
func TaskQueues() []string {
	var out []string
	for _, p := range Products {
		out = append(out, p.TaskQueues...)
	}
	return out
}

// Package product describes what every product's contract declares for the
// tools that serve all products at once: the dev server and the deployment
// register every product's search attributes, `make run` starts a worker pool
// for every task queue. Each workflows/<product>/contract exports one
// Contract; internal/devstack.Products lists them, one line per product.
package product

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// Contract is the part of a product's contract shared tooling reads.
type Contract struct {
	Name string
	// TaskQueues are the product's worker pools; workers/<queue> serves each.
	TaskQueues []string
	// SearchAttributes are the custom search attributes its runs set; they
	// must be registered on the Temporal namespace before any run starts.
	SearchAttributes []temporal.SearchAttributeKey
}

// SearchAttributeTypes merges the search attributes of contracts into
// name → type ("Keyword", "Int", ...), the form `temporal server start-dev
// --search-attribute` and `temporal operator search-attribute create` take.
// Two products may share an attribute only with the same type.
func SearchAttributeTypes(contracts ...Contract) (map[string]string, error) {
	out := map[string]string{}
	owner := map[string]string{}
	for _, c := range contracts {
		for _, k := range c.SearchAttributes {
			typ, err := typeName(k)
			if err != nil {
				return nil, fmt.Errorf("%s: search attribute %s: %w", c.Name, k.GetName(), err)
			}
			if prev, ok := out[k.GetName()]; ok && prev != typ {
				return nil, fmt.Errorf("search attribute %s is %s in %s and %s in %s", k.GetName(), prev, owner[k.GetName()], typ, c.Name)
			}
			out[k.GetName()], owner[k.GetName()] = typ, c.Name
		}
	}
	return out, nil
}

// typeName is the CLI's name of an attribute's value type.
func typeName(k temporal.SearchAttributeKey) (string, error) {
	switch k.GetValueType().String() {
	case "Keyword":
		return "Keyword", nil
	case "Text":
		return "Text", nil
	case "Int":
		return "Int", nil
	case "Double":
		return "Double", nil
	case "Bool":
		return "Bool", nil
	case "Datetime":
		return "Datetime", nil
	case "KeywordList":
		return "KeywordList", nil
	}
	return "", fmt.Errorf("unsupported value type %v", k.GetValueType())
}

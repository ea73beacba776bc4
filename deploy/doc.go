// Package deploy holds what the container deployment needs besides the
// Dockerfile and docker-compose.yml at the repository root (the Temporal
// search-attribute setup script), and the static test that keeps those files
// consistent with the code: compose_test.go runs without a Docker engine.
package deploy

// Package deploy holds what the container deployment needs besides the
// Dockerfile and docker-compose.yml at the repository root (the Temporal
// search-attribute setup script, gen-env.sh that writes the secrets into
// .env), and the tests that keep those files consistent with the code and
// safe to deploy: compose_test.go and exposure_test.go run without a Docker
// engine, redis_acl_test.go runs the compose file's Redis command line.
package deploy

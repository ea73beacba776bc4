package main

import (
	"testing"

	"github.com/edgeflow/edgeflow/internal/cli/clitest"
)

// Help, --version and completion answer without starting anything, and
// arguments are refused.
func TestCommandLine(t *testing.T) { clitest.Check(t, newRootCommand) }

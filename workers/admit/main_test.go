package main

import (
	"testing"

	"github.com/edgeflow/edgeflow/internal/cli/clitest"
)

// Help with a synopsis and examples, only its own flags, unknown flags
// refused with 2, --version and completion.
func TestCommandLine(t *testing.T) { clitest.Check(t, newRootCommand) }

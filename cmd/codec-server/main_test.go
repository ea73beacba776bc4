package main

import (
	"io"
	"testing"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli/clitest"
)

func TestCommandLine(t *testing.T) {
	clitest.Check(t, func() *cobra.Command { return newRootCommand(io.Discard, nil) })
}

// Command codec-server lets the Temporal Web UI and the temporal CLI show
// the payloads the payload codec (PAYLOAD_CODEC=on) encrypts: POST /encode
// and /decode with the codec keys (CODEC_KEYS, CODEC_KEYS_FILE or make
// run's development key file), CORS for the UI's origins only, and, when
// CODEC_SERVER_TOKENS is set, an access token required of every caller.
//
//	codec-server --addr 127.0.0.1:8234 --ui-origin http://127.0.0.1:8233
//	temporal server start-dev --ui-codec-endpoint http://127.0.0.1:8234
//	temporal workflow show -w ID --codec-endpoint http://127.0.0.1:8234
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgeflow/edgeflow/internal/cli"
	"github.com/edgeflow/edgeflow/internal/config"
	"github.com/edgeflow/edgeflow/internal/keyring"
	"github.com/edgeflow/edgeflow/internal/logging"
	"github.com/edgeflow/edgeflow/internal/payloadcodec"
)

func main() { cli.Execute(newRootCommand(os.Stderr, nil)) }

// newRootCommand is the codec server's command line; it serves until
// SIGINT or SIGTERM, and ready, if set, gets the listening address.
func newRootCommand(stderr io.Writer, ready func(string)) *cobra.Command {
	var addr, origins string
	cmd := &cobra.Command{
		Use:   "codec-server",
		Short: "Decodes the encrypted payloads for the Temporal Web UI and the temporal CLI",
		Long: `The codec server lets the Temporal Web UI and the temporal CLI show the payloads
the payload codec (PAYLOAD_CODEC=on) encrypts: POST /encode and /decode with the
codec keys (CODEC_KEYS, CODEC_KEYS_FILE or make run's development key file),
CORS for the UI's origins only, and, when CODEC_SERVER_TOKENS is set, an access
token required of every caller.`,
		Example: `  codec-server --addr 127.0.0.1:8234 --ui-origin http://127.0.0.1:8233
  temporal server start-dev --ui-codec-endpoint http://127.0.0.1:8234
  temporal workflow show -w ID --codec-endpoint http://127.0.0.1:8234`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := cli.ServeContext(cmd.Context())
			defer stop()
			return serve(ctx, addr, origins, stderr, ready)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", config.Env("CODEC_SERVER_ADDR", "127.0.0.1:8234"), "listen address (env CODEC_SERVER_ADDR)")
	cmd.Flags().StringVar(&origins, "ui-origin", config.Env("CODEC_SERVER_UI_ORIGINS", "http://127.0.0.1:8233,http://localhost:8233"),
		"the Web UI's origins, comma separated: browsers elsewhere are refused (env CODEC_SERVER_UI_ORIGINS)")
	return cmd
}

// serve serves until ctx ends.
func serve(ctx context.Context, addr, origins string, stderr io.Writer, ready func(string)) error {
	log := logging.New("codec-server", stderr)
	keys, err := keyring.Codec.Load()
	if err != nil {
		return err
	}
	var tokens []string
	for _, t := range strings.Split(os.Getenv("CODEC_SERVER_TOKENS"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, t)
		}
	}
	var uiOrigins []string
	for _, o := range strings.Split(origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			uiOrigins = append(uiOrigins, o)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           payloadcodec.Server(payloadcodec.Codec{Keys: keys}, payloadcodec.ServerOptions{UIOrigins: uiOrigins, Tokens: tokens}),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
	}
	return cli.ServeHTTP(ctx, srv, func() error { return srv.Serve(ln) }, 5*time.Second, log, func() {
		log.Info("codec server listening", "addr", ln.Addr().String(), "ui_origins", strings.Join(uiOrigins, ","),
			"keys", strings.Join(keys.IDs(), ","), "auth", authMode(tokens))
		if ready != nil {
			ready(ln.Addr().String())
		}
	})
}

func authMode(tokens []string) string {
	if len(tokens) > 0 {
		return fmt.Sprintf("bearer, %d accepted", len(tokens))
	}
	return "none"
}

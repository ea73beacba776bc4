// Package payloadcodec encrypts every payload a Temporal client sends —
// workflow and activity inputs and results, signals, updates, queries,
// memos, summaries and details, failure messages — with AES-GCM under the
// codec keys (internal/keyring's Codec source: CODEC_KEYS, CODEC_KEYS_FILE
// or make run's development key file, the keys Migrate seals credentials
// with), so the history a Temporal server stores holds ciphertext only. It
// is optional (PAYLOAD_CODEC=on); every client of one namespace must agree,
// which config.Temporal.Dial sees to. Server is the codec server the Web UI
// and the temporal CLI decode through.
package payloadcodec

import (
	"fmt"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/edgeflow/edgeflow/internal/keyring"
)

// Metadata of an encrypted payload: its encoding and the id of the key that
// sealed it (the sealed bytes carry it too; the metadata shows it in the UI).
const (
	Encoding      = "binary/encrypted"
	MetadataKeyID = "encryption-key-id"
	// SettingEnv turns the codec on for every process of a deployment.
	SettingEnv = "PAYLOAD_CODEC"
)

// associatedData binds the ciphertext to its purpose: a sealed Migrate
// credential cannot be passed off as a payload, nor the other way round.
var associatedData = []byte("edgeflow temporal payload v1")

// Codec is the payload codec over a keyring: the primary key seals, every
// key opens (rotation: put the new key first, keep the old ones).
type Codec struct{ Keys *keyring.Keyring }

// Encode seals each payload whole (data and metadata).
func (c Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("payload codec: %w", err)
		}
		sealed, err := c.Keys.Seal(plain, associatedData)
		if err != nil {
			return nil, fmt.Errorf("payload codec: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				MetadataKeyID:              []byte(c.Keys.Primary()),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// Decode opens encrypted payloads and passes others through: history
// written before the codec was turned on stays readable.
func (c Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		plain, err := c.Keys.Open(p.GetData(), associatedData)
		if err != nil {
			return nil, fmt.Errorf("payload codec: %w (are CODEC_KEYS the same for every process? keys here: %s)", err, strings.Join(c.Keys.IDs(), ", "))
		}
		var decoded commonpb.Payload
		if err := proto.Unmarshal(plain, &decoded); err != nil {
			return nil, fmt.Errorf("payload codec: opened payload is malformed: %w", err)
		}
		out[i] = &decoded
	}
	return out, nil
}

// DataConverter is the default converter with c's encryption.
func (c Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// FailureConverter moves failure messages and stack traces into encoded
// attributes, so an error's text (which may quote data) is encrypted too.
func (c Codec) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter: c.DataConverter(), EncodeCommonAttributes: true,
	})
}

// Enabled reads PAYLOAD_CODEC: on (or aes-gcm, true, 1) or off (the
// default; also false, 0).
func Enabled(getenv func(string) string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(SettingEnv))); v {
	case "", "off", "false", "0":
		return false, nil
	case "on", "aes-gcm", "true", "1":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want on or off", SettingEnv, v)
	}
}

// FromEnv is the codec when PAYLOAD_CODEC turns it on (nil when off), with
// the codec keys.
func FromEnv() (*Codec, error) {
	on, err := Enabled(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	keys, err := keyring.Codec.Load()
	if err != nil {
		return nil, fmt.Errorf("%s=on needs the codec keys: %w", SettingEnv, err)
	}
	return &Codec{Keys: keys}, nil
}

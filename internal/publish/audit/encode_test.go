package audit

import (
	"bytes"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/benchdata"
	"github.com/edgeflow/edgeflow/internal/publish/metadata"
	"github.com/edgeflow/edgeflow/internal/publish/transform"
)

// A twin made again is made at the level the version document records, so
// it is the published twin byte for byte (and the size the edge sends); a
// document that records none was written when every twin was 11/9.
func TestEncodeUsesTheRecordedLevel(t *testing.T) {
	data := benchdata.JS(4, 600<<10)
	for _, c := range []struct {
		f      metadata.File
		br, gz int
	}{
		{metadata.File{BrotliLevel: 5, GzipLevel: 6}, 5, 6},
		{metadata.File{}, 11, 9},
	} {
		br, err := Encode(c.f, metadata.BrotliSuffix, data)
		if err != nil {
			t.Fatal(err)
		}
		gz, err := Encode(c.f, metadata.GzipSuffix, data)
		if err != nil {
			t.Fatal(err)
		}
		wantBr, _ := transform.BrotliAt(data, c.br)
		wantGz, _ := transform.GzipAt(data, c.gz)
		if !bytes.Equal(br, wantBr) || !bytes.Equal(gz, wantGz) {
			t.Errorf("recorded %d/%d: the twins made again are not brotli %d and gzip %d", c.f.BrotliLevel, c.f.GzipLevel, c.br, c.gz)
		}
	}
}

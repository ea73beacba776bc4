package e2echeck

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/andybalholm/brotli"
)

func TestDecodeUndoesEachEncoding(t *testing.T) {
	plain := []byte("console.log('edgeflow')\n")
	var gz, br bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	bw := brotli.NewWriter(&br)
	_, _ = bw.Write(plain)
	_ = bw.Close()
	for enc, body := range map[string][]byte{"": plain, "identity": plain, "gzip": gz.Bytes(), "br": br.Bytes()} {
		got, err := Decode(enc, body)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("Decode(%q): %q, %v; want %q", enc, got, err, plain)
		}
	}
	if _, err := Decode("zstd", plain); err == nil {
		t.Error("Decode(zstd): no error, want one naming the encoding")
	}
}

// Both suites count on Generated being the same objects every run for a
// salt, and different ones for another salt.
func TestGeneratedIsDeterministic(t *testing.T) {
	a, b, c := Generated(20, 1), Generated(20, 1), Generated(20, 2)
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Data, b[i].Data) || len(a[i].Data) == 0 || len(a[i].Data) > 4<<10 {
			t.Fatalf("object %d: %s %d bytes, then %s %d bytes", i, a[i].Key, len(a[i].Data), b[i].Key, len(b[i].Data))
		}
	}
	if TotalBytes(a) == TotalBytes(c) && bytes.Equal(a[0].Data, c[0].Data) {
		t.Error("salt 2 made the same objects as salt 1")
	}
}

package transform

import (
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"io"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

func TestSRIKnownVector(t *testing.T) {
	input := []byte("alert('Hello, world.');")
	sum := sha512.Sum512(input)
	computed := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	// Verified independently: printf "%s" "alert('Hello, world.');" | openssl dgst -sha512 -binary | base64
	const literal = "sha512-Q2bFTOhEALkN8hOms2FKTDLy7eugP2zFZ1T8LCvX42Fp3WoNr3bjZSAHeOsHrbV1Fu9/A0EzCinRE7Af1ofPrw=="
	if got := SRI(input); got != computed || got != literal {
		t.Errorf("SRI = %q, want %q (= %q)", got, literal, computed)
	}
	const empty = "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
	if got := SRI(nil); got != empty {
		t.Errorf("SRI(empty) = %q, want %q", got, empty)
	}
}

func unbrotli(t *testing.T, data []byte) []byte {
	t.Helper()
	out, err := io.ReadAll(brotli.NewReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatalf("brotli decode: %v", err)
	}
	return out
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("gzip header: %v", err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("gzip decode: %v", err)
	}
	return out
}

func compressionInputs() map[string][]byte {
	return map[string][]byte{
		"empty":  {},
		"tiny":   []byte("alert('Hello, world.');"),
		"corpus": generateJSCorpus(100<<10, 1),
		"binary": func() []byte { // incompressible bytes exercise stored blocks
			b := make([]byte, 70<<10)
			for i := range b {
				b[i] = byte(i*i*2654435761>>13) ^ byte(i>>7)
			}
			return b
		}(),
	}
}

func TestCompressionRoundTripAndDeterminism(t *testing.T) {
	for name, input := range compressionInputs() {
		t.Run(name, func(t *testing.T) {
			br1, err := Brotli(input)
			if err != nil {
				t.Fatal(err)
			}
			br2, err := Brotli(input) // typically served by the pooled writer of the first call
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(br1, br2) {
				t.Error("brotli output differs between calls")
			}
			if got := unbrotli(t, br1); !bytes.Equal(got, input) {
				t.Error("brotli round trip differs from input")
			}

			gz1, err := Gzip(input)
			if err != nil {
				t.Fatal(err)
			}
			gz2, err := Gzip(input)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gz1, gz2) {
				t.Error("gzip output differs between calls")
			}
			if got := gunzip(t, gz1); !bytes.Equal(got, input) {
				t.Error("gzip round trip differs from input")
			}
			checkGzipHeader(t, gz1)
		})
	}
}

// checkGzipHeader asserts the RFC 1952 header carries nothing host- or
// time-dependent: no optional fields, MTIME 0, OS 255 (unknown).
func checkGzipHeader(t *testing.T, gz []byte) {
	t.Helper()
	if len(gz) < 10 {
		t.Fatalf("gzip output too short: %d bytes", len(gz))
	}
	if gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 {
		t.Errorf("bad gzip magic/method: % x", gz[:3])
	}
	if flags := gz[3]; flags != 0 {
		t.Errorf("gzip FLG = %#x, want 0 (no name, comment or extra)", flags)
	}
	if mtime := gz[4:8]; !bytes.Equal(mtime, []byte{0, 0, 0, 0}) {
		t.Errorf("gzip MTIME = % x, want 0", mtime)
	}
	if gz[9] != 255 {
		t.Errorf("gzip OS = %d, want 255", gz[9])
	}
}

// A pooled writer must not carry state from a previous, larger input.
func TestCompressionConcurrentPoolReuse(t *testing.T) {
	inputs := [][]byte{generateJSCorpus(24<<10, 2), []byte("x"), generateJSCorpus(6<<10, 3), nil}
	wantBr := make([][]byte, len(inputs))
	wantGz := make([][]byte, len(inputs))
	for i, in := range inputs {
		wantBr[i], _ = Brotli(in)
		wantGz[i], _ = Gzip(in)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 2; round++ {
				for i, in := range inputs {
					br, err := Brotli(in)
					if err != nil || !bytes.Equal(br, wantBr[i]) {
						t.Errorf("brotli input %d: differs after reuse (err %v)", i, err)
					}
					gz, err := Gzip(in)
					if err != nil || !bytes.Equal(gz, wantGz[i]) {
						t.Errorf("gzip input %d: differs after reuse (err %v)", i, err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// Brotli must produce exactly what a fresh quality-11 writer with the fitted
// window produces: pooling is an optimisation, not a format change.
func TestBrotliMatchesFreshWriter(t *testing.T) {
	input := generateJSCorpus(30<<10, 4)
	var fresh bytes.Buffer
	w := brotli.NewWriterOptions(&fresh, brotli.WriterOptions{Quality: 11, LGWin: brotliWindowBits(int64(len(input)))})
	if _, err := w.Write(input); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, _ = Brotli(generateJSCorpus(50<<10, 5)) // dirty a pooled writer first
	got, err := Brotli(input)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, fresh.Bytes()) {
		t.Errorf("pooled brotli output (%d bytes) differs from a fresh writer's (%d bytes)", len(got), fresh.Len())
	}
}

func TestBrotliWindowFitsInput(t *testing.T) {
	for _, c := range []struct {
		n    int64
		bits int
	}{{0, 10}, {1000, 10}, {1008, 10}, {1009, 11}, {30 << 10, 15}, {4 << 20, 22}, {64 << 20, 22}} {
		if got := brotliWindowBits(c.n); got != c.bits {
			t.Errorf("brotliWindowBits(%d) = %d, want %d", c.n, got, c.bits)
		}
	}
}

func TestSRIOfMatchesSRI(t *testing.T) {
	data := bytes.Repeat([]byte("stream me "), 100_000)
	got, n, err := SRIOf(bytes.NewReader(data))
	if err != nil || got != SRI(data) || n != int64(len(data)) {
		t.Errorf("SRIOf = %s, %d, %v; want %s, %d", got, n, err, SRI(data), len(data))
	}
}

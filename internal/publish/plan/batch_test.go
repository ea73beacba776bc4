package plan_test

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/edgeflow/edgeflow/internal/publish/plan"
)

func roundTrip(t *testing.T, files []plan.BatchFile) []plan.BatchFile {
	t.Helper()
	var buf bytes.Buffer
	if err := plan.WriteBatch(&buf, files); err != nil {
		t.Fatal(err)
	}
	got, err := plan.ReadBatch(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestBatchRoundTrip(t *testing.T) {
	long := strings.Repeat("very-long-directory-name/", 12) + "file.js" // beyond ustar's 100-byte name
	tests := []struct {
		name  string
		files []plan.BatchFile
	}{
		{"no files", nil},
		{"one empty file", []plan.BatchFile{{Path: "empty.css", TwinWanted: true}}},
		{"mixed", []plan.BatchFile{
			{Path: "a.js", TwinWanted: true, Data: []byte("export const a = 1;\n")},
			{Path: "nested/deeper/b.css", Data: []byte(".b{}")},
			{Path: "nested/zero.txt", Data: []byte{}},
			{Path: "img/bin.png", Data: []byte{0, 1, 2, 0xff, 0xfe, '\n', 0}},
			{Path: long, Data: bytes.Repeat([]byte("x"), 10000)},
			{Path: "ünïcode/файл.js", TwinWanted: true, Data: []byte("1")},
			{Path: ".edgeflow-batch.json", Data: []byte("a file that shares the manifest's name")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := roundTrip(t, tt.files)
			if len(got) != len(tt.files) {
				t.Fatalf("%d files back, wrote %d", len(got), len(tt.files))
			}
			for i, f := range tt.files {
				g := got[i]
				if g.Path != f.Path || g.TwinWanted != f.TwinWanted || !bytes.Equal(g.Data, f.Data) {
					t.Errorf("file %d: got %q twin=%v %d bytes, want %q twin=%v %d bytes",
						i, g.Path, g.TwinWanted, len(g.Data), f.Path, f.TwinWanted, len(f.Data))
				}
				if g.Data == nil {
					t.Errorf("file %d: nil data", i)
				}
			}
		})
	}
}

// tarOf builds a tar stream by hand, for inputs WriteBatch never writes. An
// entry whose size exceeds its body ends the stream there (truncated).
func tarOf(t testing.TB, entries ...tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		size := max(e.size, int64(len(e.body)))
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
		if size > int64(len(e.body)) {
			return buf.Bytes()
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type tarFile struct {
	name, body string
	size       int64 // header size when it differs from the body (a truncated entry)
}

const manifestName = ".edgeflow-batch.json"

func TestReadBatchRejects(t *testing.T) {
	var good bytes.Buffer
	if err := plan.WriteBatch(&good, []plan.BatchFile{{Path: "a.js", Data: []byte("12345678")}, {Path: "b.js", Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"empty input", nil, "manifest"},
		{"not a tar", []byte("this is not a tar archive at all, it is just some text"), "manifest"},
		{"no manifest first", tarOf(t, tarFile{name: "a.js", body: "1"}), "manifest"},
		{"manifest not JSON", tarOf(t, tarFile{name: manifestName, body: "{not json"}), "manifest"},
		{"manifest of the wrong shape", tarOf(t, tarFile{name: manifestName, body: `{"path":"a"}`}), "manifest"},
		{"file missing", tarOf(t, tarFile{name: manifestName, body: `[{"path":"a.js"},{"path":"b.js"}]`}, tarFile{name: "a.js", body: "1"}), "file 2 of 2"},
		{"file out of order", tarOf(t, tarFile{name: manifestName, body: `[{"path":"a.js"}]`}, tarFile{name: "b.js", body: "1"}), `"b.js"`},
		{"truncated file", tarOf(t, tarFile{name: manifestName, body: `[{"path":"a.js"}]`}, tarFile{name: "a.js", body: "12", size: 1000}), "a.js"},
		// Cut inside the second file's header (the end is two zero blocks, then its one data block).
		{"truncated archive", good.Bytes()[:len(good.Bytes())-1024-512-256], "file 2 of 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := plan.ReadBatch(bytes.NewReader(tt.input))
			if err == nil {
				t.Fatalf("no error; files %+v", files)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// A corrupted header claiming a huge file must be an error: ReadBatch
// allocates the header's size up front, which panics (or exhausts memory).
func TestReadBatchHugeHeaderSize(t *testing.T) {
	input := tarOf(t, tarFile{name: manifestName, body: `[{"path":"a.js"}]`}, tarFile{name: "a.js", body: "", size: 1 << 62})
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("ReadBatch panicked: %v", r)
		}
	}()
	if _, err := plan.ReadBatch(bytes.NewReader(input)); err == nil {
		t.Fatal("no error for a truncated 4 EiB entry")
	}
}

func FuzzReadBatch(f *testing.F) {
	for _, files := range [][]plan.BatchFile{
		nil,
		{{Path: "a.js", TwinWanted: true, Data: []byte("let a=1")}},
		{{Path: "dir/b.css", Data: []byte(".b{}")}, {Path: "empty"}},
	} {
		var buf bytes.Buffer
		if err := plan.WriteBatch(&buf, files); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte{})
	f.Add([]byte("not a tar"))
	f.Add(tarOf(f, tarFile{name: manifestName, body: `[{"path":"a"},{"path":"b"}]`}, tarFile{name: "a", body: "1"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := plan.ReadBatch(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever it accepts must write back to something it reads the same.
		var buf bytes.Buffer
		if err := plan.WriteBatch(&buf, files); err != nil {
			return // names tar cannot hold are fine to refuse
		}
		again, err := plan.ReadBatch(&buf)
		if err != nil {
			t.Fatalf("re-reading an accepted batch: %v", err)
		}
		if len(again) != len(files) {
			t.Fatalf("%d files, then %d", len(files), len(again))
		}
		for i := range files {
			if again[i].Path != files[i].Path || !bytes.Equal(again[i].Data, files[i].Data) || again[i].TwinWanted != files[i].TwinWanted {
				t.Fatalf("file %d changed in a round trip", i)
			}
		}
	})
}

// A streamed batch carries its one file's bytes from a reader into the
// batch and back out of it, never as one slice; OpenBatch checks its size
// against the manifest.
func TestStreamedBatchRoundTrip(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	var buf bytes.Buffer
	f := plan.BatchFile{Path: "dist/big.js.map", Size: int64(len(body)), Blocked: []string{"dist/big.js.map.gz"}}
	if err := plan.WriteStreamedBatch(&buf, f, bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	b, err := plan.OpenBatch(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Files) != 1 || !b.Files[0].Streamed || b.Files[0].Size != int64(len(body)) || b.Files[0].Blocked[0] != "dist/big.js.map.gz" {
		t.Fatalf("manifest %+v", b.Files)
	}
	got, r, err := b.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(r)
	if err != nil || got.Path != f.Path || !bytes.Equal(data, body) {
		t.Errorf("file %q: %d bytes, %v", got.Path, len(data), err)
	}
	if _, _, err := b.Next(); err != io.EOF {
		t.Errorf("after the last file: %v", err)
	}
	if _, err := plan.ReadBatch(bytes.NewReader(buf.Bytes())); err == nil || !strings.Contains(err.Error(), "streamed") {
		t.Errorf("ReadBatch of a streamed batch: %v", err)
	}

	// A source shorter than the manifest says fails the write.
	if err := plan.WriteStreamedBatch(io.Discard, f, bytes.NewReader(body[:100])); err == nil {
		t.Error("a short source was packed")
	}
	// A streamed entry whose header disagrees with the manifest is refused.
	manifest := `[{"path":"a.js","streamed":true,"size":10}]`
	bad := tarOf(t, tarFile{name: ".edgeflow-batch.json", body: manifest}, tarFile{name: "a.js", body: "0123456789ab"})
	b, err = plan.OpenBatch(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Next(); err == nil || !strings.Contains(err.Error(), "12 bytes, the manifest says 10") {
		t.Errorf("size mismatch: %v", err)
	}
}

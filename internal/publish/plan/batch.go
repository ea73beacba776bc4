package plan

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// BatchFile is one file shipped to the compress pool.
type BatchFile struct {
	Path       string `json:"path"`
	TwinWanted bool   `json:"twinWanted,omitempty"`
	// Blocked are generated representations (of the file or its twin) not
	// to write: a file the version ships has their path (see Blocked).
	Blocked []string `json:"blocked,omitempty"`
	// Streamed marks a file over OwnBatchBytes, alone in its batch: the
	// compress pool reads it from the batch to disk and processes it from
	// there, never whole in memory (OpenBatch); Size is its byte count.
	Streamed bool   `json:"streamed,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Data     []byte `json:"-"`
}

const batchManifest = ".edgeflow-batch.json"

// MaxBatchFileBytes bounds one file a batch holds in memory: above
// OwnBatchBytes, far below what a corrupted header could claim.
const MaxBatchFileBytes = 64 << 20

// MaxStreamedFileBytes bounds a streamed file (written to disk, not
// memory): the most an archive may extract (tarx.DefaultLimits).
const MaxStreamedFileBytes = 2 << 30

// WriteBatch packs a batch as one tar object: a manifest, then the files.
// One object per batch instead of one per file keeps staging cheap.
func WriteBatch(w io.Writer, files []BatchFile) error {
	tw := tar.NewWriter(w)
	manifest, err := json.Marshal(files)
	if err != nil {
		return err
	}
	if err := writeTarFile(tw, batchManifest, manifest); err != nil {
		return err
	}
	for _, f := range files {
		if err := writeTarFile(tw, f.Path, f.Data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// WriteStreamedBatch packs the batch of one streamed file (f.Streamed, of
// f.Size bytes) as WriteBatch does, copying its bytes from src as it goes:
// the file is never held whole.
func WriteStreamedBatch(w io.Writer, f BatchFile, src io.Reader) error {
	f.Streamed, f.Data = true, nil
	tw := tar.NewWriter(w)
	manifest, err := json.Marshal([]BatchFile{f})
	if err != nil {
		return err
	}
	if err := writeTarFile(tw, batchManifest, manifest); err != nil {
		return err
	}
	if err := tw.WriteHeader(tarHeader(f.Path, f.Size)); err != nil {
		return fmt.Errorf("batch: %s: %w", f.Path, err)
	}
	if n, err := io.CopyN(tw, src, f.Size); err != nil {
		return fmt.Errorf("batch: %s: %d of %d bytes: %w", f.Path, n, f.Size, err)
	}
	return tw.Close()
}

func tarHeader(name string, size int64) *tar.Header {
	return &tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
}

func writeTarFile(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(tarHeader(name, int64(len(data)))); err != nil {
		return fmt.Errorf("batch: %s: %w", name, err)
	}
	_, err := tw.Write(data)
	return err
}

// BatchReader reads a batch as it streams in: the manifest first (Files),
// then each file's bytes in turn (Next).
type BatchReader struct {
	Files []BatchFile
	tr    *tar.Reader
	next  int
}

// OpenBatch reads a batch's manifest from r.
func OpenBatch(r io.Reader) (*BatchReader, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != batchManifest {
		return nil, errors.New("batch: missing manifest")
	}
	var files []BatchFile
	if err := json.NewDecoder(tr).Decode(&files); err != nil {
		return nil, fmt.Errorf("batch: manifest: %w", err)
	}
	return &BatchReader{Files: files, tr: tr}, nil
}

// Next returns the next file of the manifest and a reader of exactly its
// bytes (valid until the following Next). A streamed file's size must be
// the manifest's and at most MaxStreamedFileBytes; any other's at most
// MaxBatchFileBytes.
func (b *BatchReader) Next() (*BatchFile, io.Reader, error) {
	i := b.next
	if i >= len(b.Files) {
		return nil, nil, io.EOF
	}
	b.next++
	f := &b.Files[i]
	hdr, err := b.tr.Next()
	if err != nil {
		return nil, nil, fmt.Errorf("batch: file %d of %d: %w", i+1, len(b.Files), err)
	}
	if hdr.Name != f.Path {
		return nil, nil, fmt.Errorf("batch: file %d is %q, manifest says %q", i+1, hdr.Name, f.Path)
	}
	// The header's size is not trusted with an allocation (or the disk)
	// beyond what a release file may be.
	bound := int64(MaxBatchFileBytes)
	if f.Streamed {
		bound = MaxStreamedFileBytes
		if hdr.Size != f.Size {
			return nil, nil, fmt.Errorf("batch: %s: %d bytes, the manifest says %d", hdr.Name, hdr.Size, f.Size)
		}
	}
	if hdr.Size < 0 || hdr.Size > bound {
		return nil, nil, fmt.Errorf("batch: %s: size %d is outside 0..%d", hdr.Name, hdr.Size, bound)
	}
	return f, &exactReader{r: b.tr, left: hdr.Size, name: hdr.Name}, nil
}

// exactReader reads exactly left bytes: a stream that ends sooner is an
// error, not a short file.
type exactReader struct {
	r    io.Reader
	left int64
	name string
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	switch {
	case err == io.EOF && e.left > 0:
		return n, fmt.Errorf("batch: %s: %w", e.name, io.ErrUnexpectedEOF)
	case err == io.EOF:
		return n, nil
	case err != nil:
		return n, fmt.Errorf("batch: %s: %w", e.name, err)
	}
	return n, nil
}

// ReadBatch unpacks a batch written by WriteBatch, every file in memory:
// a streamed file is refused (OpenBatch reads it).
func ReadBatch(r io.Reader) ([]BatchFile, error) {
	b, err := OpenBatch(r)
	if err != nil {
		return nil, err
	}
	return b.ReadAll()
}

// ReadAll reads every file left into memory (BatchFile.Data); a streamed
// file is refused.
func (b *BatchReader) ReadAll() ([]BatchFile, error) {
	for {
		f, body, err := b.Next()
		if err == io.EOF {
			return b.Files, nil
		}
		if err != nil {
			return nil, err
		}
		if f.Streamed {
			return nil, fmt.Errorf("batch: %s is streamed, not read into memory", f.Path)
		}
		f.Data = make([]byte, body.(*exactReader).left)
		if _, err := io.ReadFull(body, f.Data); err != nil {
			return nil, err
		}
	}
}

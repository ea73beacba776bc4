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
	Data    []byte   `json:"-"`
}

const batchManifest = ".edgeflow-batch.json"

// MaxBatchFileBytes bounds one file in a batch: above the 25 MiB extraction
// limit, far below what a corrupted header could claim.
const MaxBatchFileBytes = 64 << 20

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

func writeTarFile(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("batch: %s: %w", name, err)
	}
	_, err := tw.Write(data)
	return err
}

// ReadBatch unpacks a batch written by WriteBatch.
func ReadBatch(r io.Reader) ([]BatchFile, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != batchManifest {
		return nil, errors.New("batch: missing manifest")
	}
	var files []BatchFile
	if err := json.NewDecoder(tr).Decode(&files); err != nil {
		return nil, fmt.Errorf("batch: manifest: %w", err)
	}
	for i := range files {
		hdr, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("batch: file %d of %d: %w", i+1, len(files), err)
		}
		if hdr.Name != files[i].Path {
			return nil, fmt.Errorf("batch: file %d is %q, manifest says %q", i+1, hdr.Name, files[i].Path)
		}
		// The header's size is not trusted with an allocation beyond what a
		// release file may be.
		if hdr.Size < 0 || hdr.Size > MaxBatchFileBytes {
			return nil, fmt.Errorf("batch: %s: size %d is outside 0..%d", hdr.Name, hdr.Size, MaxBatchFileBytes)
		}
		files[i].Data = make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, files[i].Data); err != nil {
			return nil, fmt.Errorf("batch: %s: %w", hdr.Name, err)
		}
	}
	return files, nil
}

package transform

import (
	"bufio"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// Streamed is a file processed without holding it in memory: its
// description, and its brotli and gzip twins in files on disk.
type Streamed struct {
	Path        string
	Size        int64
	SRI         string
	ContentType string
	// Levels made the twins; zero when the file is stored as is (a type
	// that does not compress, or over the library's limit), and then
	// BrotliFile and GzipFile are "".
	Levels               Levels
	BrotliFile, GzipFile string
	BrotliSize, GzipSize int64
}

// Remove deletes the twins' files.
func (s *Streamed) Remove() {
	for _, f := range []string{s.BrotliFile, s.GzipFile} {
		if f != "" {
			_ = os.Remove(f) // scratch space: a leftover costs disk, not correctness
		}
	}
}

// streamChunk is how much is read at a time: the only buffer besides the
// compressors' own state.
const streamChunk = 256 << 10

// Stream processes the file at path, of size bytes, read from src once: it
// hashes the bytes (SRI) and, at the levels PlanFor picks for that size,
// compresses them with brotli and gzip into files under dir. Its memory is
// bounded whatever the size (a read buffer, and the compressors' windows:
// brotli's at most 4 MiB). The twins are byte for byte what File makes of
// the same bytes (TestStreamMatchesFile), so a file's stored twins do not
// depend on which path processed it. No minified twin is made: streamed
// files are over MaxMinifySize. progress, if set, is told the bytes read
// so far; ctx cancels between chunks.
func Stream(ctx context.Context, path string, src io.Reader, size int64, opts Options, dir string, progress func(int64)) (out Streamed, err error) {
	defer func() {
		if v := recover(); v != nil {
			out.Remove()
			out, err = Streamed{}, &PanicError{Path: path, Value: fmt.Sprint(v), Stack: string(debug.Stack())}
		}
	}()
	plan := opts.PlanFor(path, size)
	out = Streamed{Path: path, ContentType: ContentType(path), Levels: plan.Levels}
	hash := sha512.New()
	sinks := []io.Writer{hash}
	var finish []func() error
	if plan.Levels != (Levels{}) {
		br, err := newTwinFile(dir, "*.br", &out.BrotliFile)
		if err != nil {
			return out, err
		}
		defer br.close()
		bw, done, err := newBrotliWriter(br.buf, plan.Levels.Brotli, size)
		if err != nil {
			out.Remove()
			return Streamed{}, err
		}
		gz, err := newTwinFile(dir, "*.gz", &out.GzipFile)
		if err != nil {
			out.Remove()
			return Streamed{}, err
		}
		defer gz.close()
		gw, gdone, err := newGzipWriter(gz.buf, plan.Levels.Gzip)
		if err != nil {
			out.Remove()
			return Streamed{}, err
		}
		sinks = append(sinks, bw, gw)
		finish = append(finish,
			func() error { return closeTwin(bw.Close, done, br, &out.BrotliSize) },
			func() error { return closeTwin(gw.Close, gdone, gz, &out.GzipSize) })
	}
	n, err := copyChunks(ctx, io.MultiWriter(sinks...), src, progress)
	if err == nil && n != size {
		err = fmt.Errorf("%s: read %d bytes, expected %d", path, n, size)
	}
	for _, f := range finish {
		if err != nil {
			break
		}
		err = f()
	}
	if err != nil {
		out.Remove()
		return Streamed{}, fmt.Errorf("process %s: %w", path, err)
	}
	out.Size = n
	out.SRI = "sha512-" + base64.StdEncoding.EncodeToString(hash.Sum(nil))
	return out, nil
}

// copyChunks copies src to dst a chunk at a time, checking ctx and
// reporting progress between chunks.
func copyChunks(ctx context.Context, dst io.Writer, src io.Reader, progress func(int64)) (int64, error) {
	buf := make([]byte, streamChunk)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, rerr := io.ReadFull(src, buf)
		if k > 0 {
			if _, err := dst.Write(buf[:k]); err != nil {
				return n, err
			}
			n += int64(k)
			if progress != nil {
				progress(n)
			}
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return n, nil
		default:
			return n, rerr
		}
	}
}

// twinFile is a twin being written to disk through a buffer.
type twinFile struct {
	f   *os.File
	buf *bufio.Writer
}

func newTwinFile(dir, pattern string, name *string) (*twinFile, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	*name = f.Name()
	return &twinFile{f: f, buf: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (t *twinFile) close() { _ = t.f.Close() } // after closeTwin, a second Close is harmless

// closeTwin ends a compressor, returns it to its pool, and flushes and
// closes its file, recording the twin's size.
func closeTwin(closeWriter func() error, backToPool func(), t *twinFile, size *int64) error {
	if err := closeWriter(); err != nil {
		return err
	}
	backToPool()
	if err := t.buf.Flush(); err != nil {
		return err
	}
	st, err := t.f.Stat()
	if err != nil {
		return err
	}
	*size = st.Size()
	return t.f.Close()
}

package benchdata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
)

// vlqAlphabet is what a source map's mappings are written in.
const vlqAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// SourceMap writes exactly size bytes of a source-map-like JSON document,
// as bundlers ship them beside large bundles: the sources' text
// (sourcesContent, about half) and a long VLQ mappings string, so it
// compresses like a real one. It is generated as it is written, never held
// whole, so tests can publish files of hundreds of MiB; the same seed and
// size give the same bytes. size must be at least 1 KiB.
func SourceMap(w io.Writer, seed uint64, size int64) error {
	if size < 1<<10 {
		return fmt.Errorf("source map of %d bytes: at least 1 KiB", size)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	r := rand.New(rand.NewPCG(seed, 0x3a9))
	var written int64
	write := func(s string) {
		n, _ := bw.WriteString(s) // the error is Flush's
		written += int64(n)
	}
	write(`{"version":3,"file":"bundle.js","sourcesContent":[`)
	const tail = `"}`
	var sources []string
	// About half the document is the sources' text; the rest, mappings.
	for i := 0; written < size/2; i++ {
		text, _ := json.Marshal(string(JS(seed*7_919+uint64(i), 8<<10+r.IntN(56<<10))))
		if i > 0 {
			write(",")
		}
		write(string(text))
		sources = append(sources, fmt.Sprintf("webpack://bundle/src/%s/%s-%d.js", words[i%41%len(words)], words[i%len(words)], i))
	}
	names, _ := json.Marshal(sources)
	write(`],"sources":` + string(names) + `,"names":["exports","module","require","default"],"mappings":"`)
	if written+int64(len(tail)) > size {
		return fmt.Errorf("source map of %d bytes: too small for its %d bytes of sources", size, written)
	}
	// Segments as bundlers write them: a column delta, then mostly small
	// deltas of source, line and column ("AAAA", "SAAS", "CAAC"), a line
	// (";") every few dozen.
	left := size - written - int64(len(tail))
	buf := make([]byte, 0, 64<<10)
	small := "AAAAAAACCCDDEGIK"
	for left > 0 {
		buf = buf[:0]
		for int64(len(buf)) < min(left, 60<<10) {
			buf = append(buf, vlqAlphabet[r.IntN(32)], small[r.IntN(len(small))], small[r.IntN(len(small))], small[r.IntN(len(small))])
			if r.IntN(8) == 0 {
				buf = append(buf, vlqAlphabet[r.IntN(32)]) // a name
			}
			if r.IntN(24) == 0 {
				buf = append(buf, ';')
			} else {
				buf = append(buf, ',')
			}
		}
		buf = buf[:min(int64(len(buf)), left)]
		n, _ := bw.Write(buf)
		written += int64(n)
		left -= int64(n)
	}
	write(tail)
	return bw.Flush()
}

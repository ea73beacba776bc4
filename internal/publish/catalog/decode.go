package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/edgeflow/edgeflow/internal/textdist"
)

// decodeFile decodes one catalog file as far as it can and returns what is
// wrong with its shape: invalid JSON (then nothing else is checked) and
// values of the wrong type are errors, as they are for cdnjs; fields the
// format does not have and repeated fields are warnings (ignored, and the
// last value counts, as every JSON parser reads it). Every problem is
// reported, not just the first, and the returned Package holds every field
// that did decode. mistyped lists the field paths whose values had the
// wrong type; present lists the top-level members the file has.
func decodeFile(data []byte) (p Package, problems []Problem, mistyped []string, present map[string]bool) {
	// A syntax error ends the check. Any other error is a type mismatch:
	// Unmarshal still fills every field it can, and the shape walk below
	// reports all mismatches, not only the first one Unmarshal returns.
	var syntaxErr *json.SyntaxError
	if err := json.Unmarshal(data, &p); errors.As(err, &syntaxErr) {
		line, col := syntaxErrorPosition(data, syntaxErr)
		return Package{}, []Problem{{Reason: fmt.Sprintf("invalid JSON at line %d:%d: %s", line, col, syntaxErr)}}, nil, nil
	}
	w := shapeWalker{dec: json.NewDecoder(bytes.NewReader(data)), present: map[string]bool{}}
	w.dec.UseNumber()
	w.value(reflect.TypeFor[Package](), "")
	return p, w.problems, w.mistyped, w.present
}

// syntaxErrorPosition is the 1-based line and character column of a JSON
// syntax error: the offending byte (the last of the Offset bytes read), or
// the end of the input when it ended too soon.
func syntaxErrorPosition(data []byte, err *json.SyntaxError) (line, col int) {
	pos := int(err.Offset) - 1
	if pos < 0 || pos >= len(data) || strings.Contains(err.Error(), "unexpected end") {
		pos = len(data)
	}
	before := data[:pos]
	line = bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[lineStart:]) + 1
}

// shapeWalker compares a JSON document token by token with the Go type it
// decodes into, in document order, recording unknown and repeated fields
// and type mismatches with their field path (e.g. "autoupdate.fileMap[0]").
type shapeWalker struct {
	dec      *json.Decoder
	problems []Problem
	mistyped []string
	present  map[string]bool // top-level members seen
}

func (w *shapeWalker) add(field, format string, args ...any) {
	w.problems = append(w.problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (w *shapeWalker) warn(field, format string, args ...any) {
	w.problems = append(w.problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...), Severity: Warning})
}

// addMistyped records a value of the wrong type at field.
func (w *shapeWalker) addMistyped(field, got, want string) {
	w.add(field, "%s where %s was expected", got, want)
	w.mistyped = append(w.mistyped, field)
}

// value consumes one JSON value that should decode into t.
func (w *shapeWalker) value(t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := w.dec.Token()
	if err != nil {
		// decodeFile checked the syntax first, so this is not expected;
		// report it rather than lose it.
		w.add(path, "invalid JSON: %v", err)
		return
	}
	want := describeKind(t)
	switch tok := tok.(type) {
	case json.Delim:
		switch {
		case tok == '{' && t.Kind() == reflect.Struct:
			w.object(t, path)
		case tok == '[' && t.Kind() == reflect.Slice:
			for i := 0; w.dec.More(); i++ {
				w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			}
			w.end(path) // ']'
		default:
			got := "an object"
			if tok == '[' {
				got = "an array"
			}
			w.addMistyped(path, got, want)
			w.skipRest()
		}
	case nil:
		// null leaves the field unset, as encoding/json does; required
		// fields are then reported as missing by validation.
	case string:
		if t.Kind() != reflect.String {
			w.addMistyped(path, "a string", want)
		}
	case json.Number:
		switch {
		case !isNumberKind(t.Kind()):
			w.addMistyped(path, "a number", want)
		case isIntegerKind(t.Kind()) && !isInteger(tok):
			// encoding/json leaves the field unset: say so, not 0.
			w.addMistyped(path, "the number "+tok.String(), "a whole number")
		}
	case bool:
		if t.Kind() != reflect.Bool {
			w.addMistyped(path, "a boolean", want)
		}
	}
}

// object consumes the members of an object (after its '{') for struct t.
func (w *shapeWalker) object(t reflect.Type, path string) {
	fields := jsonFields(t)
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			w.add(path, "invalid JSON: %v", err)
			return
		}
		key, _ := tok.(string)
		fieldPath := joinPath(path, key)
		field, known := fields[key]
		switch {
		case !known:
			if suggestion := closestField(fields, key); suggestion != "" {
				w.warn(fieldPath, "unknown field, ignored (did you mean %q?)", suggestion)
			} else {
				w.warn(fieldPath, "unknown field, ignored")
			}
			w.skipValue()
			continue
		case seen[key]:
			w.warn(fieldPath, "repeated field; the last value counts, as JSON parsers read it")
		}
		seen[key] = true
		if path == "" {
			w.present[key] = true
		}
		w.value(field.Type, fieldPath)
	}
	w.end(path) // '}'
}

// end consumes the ']' or '}' that closes the array or object at path. As
// in value, an error is not expected after decodeFile's syntax check, and
// is reported rather than lost.
func (w *shapeWalker) end(path string) {
	if _, err := w.dec.Token(); err != nil {
		w.add(path, "invalid JSON: %v", err)
	}
}

// skipValue consumes one whole JSON value.
func (w *shapeWalker) skipValue() {
	tok, err := w.dec.Token()
	if err != nil {
		return
	}
	if _, ok := tok.(json.Delim); ok {
		w.skipRest()
	}
}

// skipRest consumes the rest of the object or array just opened.
func (w *shapeWalker) skipRest() {
	for depth := 1; depth > 0; {
		tok, err := w.dec.Token()
		if err != nil {
			return
		}
		if delim, ok := tok.(json.Delim); ok {
			if delim == '{' || delim == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
}

// jsonFields maps the JSON names of t's exported fields to the fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		fields[name] = f
	}
	return fields
}

// closestField suggests the field an unknown key was probably meant to be:
// one differing only in case (which encoding/json would even accept, but
// the format is spelled exactly) or by at most two edits ("fileMaps").
func closestField(fields map[string]reflect.StructField, key string) string {
	const maxEdits = 2
	best, bestDistance := "", maxEdits+1
	for name := range fields {
		d := textdist.Distance(strings.ToLower(name), strings.ToLower(key), maxEdits)
		if d < bestDistance || (d == bestDistance && name < best) {
			best, bestDistance = name, d
		}
	}
	return best
}

func describeKind(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.Struct:
		return "an object"
	case t.Kind() == reflect.Slice:
		return "an array"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "a boolean"
	case isNumberKind(t.Kind()):
		return "a number"
	}
	return t.String()
}

func isNumberKind(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

func isIntegerKind(k reflect.Kind) bool {
	return isNumberKind(k) && k != reflect.Float32 && k != reflect.Float64
}

// isInteger reports a number an int64 holds.
func isInteger(n json.Number) bool {
	_, err := n.Int64()
	return err == nil
}

// joinPath appends a member name to a field path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// errorsOf joins the error-severity problems into one error, nil when
// there are none; warnings do not stop a load.
func errorsOf(file string, problems []Problem) error {
	var errs []error
	for _, p := range problems {
		if p.Severity == Warning {
			continue
		}
		if file != "" {
			p.File = file
		}
		errs = append(errs, errors.New(p.String()))
	}
	return errors.Join(errs...)
}

package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/ruvllm/ruvllm/ipc"
)

// decode reads a JSON body into v. Unknown fields are tolerated; a field
// of the wrong type is named in the error; an oversized body is 413.
func decode(r *http.Request, v any) error {
	// A UTF-8 byte order mark (PowerShell's and some Windows editors'
	// bodies start with one) is skipped, not "invalid character 'ï'".
	body := bufio.NewReader(r.Body)
	if bom, err := body.Peek(3); err == nil && string(bom) == "\ufeff" {
		body.Discard(3)
	}
	dec := json.NewDecoder(body)
	err := dec.Decode(v)
	if err == nil {
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return &requestError{status: http.StatusBadRequest, msg: "request body has data after the JSON object"}
		}
		return nil
	}
	var maxErr *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &maxErr):
		return &requestError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", maxErr.Limit)}
	case errors.As(err, &typeErr):
		field := jsonPath(typeErr.Field)
		if field == "" {
			field = "body"
		}
		return &requestError{status: http.StatusBadRequest, msg: fmt.Sprintf("field %q must be %s, not %s", field, jsonKind(typeErr.Type, typeErr.Value), typeErr.Value), param: field}
	case errors.As(err, &syntaxErr):
		return &requestError{status: http.StatusBadRequest, msg: fmt.Sprintf("invalid JSON at byte %d: %v", syntaxErr.Offset, err)}
	case errors.Is(err, io.EOF):
		return &requestError{status: http.StatusBadRequest, msg: "empty request body"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &requestError{status: http.StatusBadRequest, msg: "invalid JSON: the body ends in the middle of a value"}
	}
	return &requestError{status: http.StatusBadRequest, msg: "invalid request: " + err.Error()}
}

// jsonPath drops the names of embedded Go structs (capitalised segments)
// from a decoder field path, leaving the JSON names the client sent.
func jsonPath(p string) string {
	var keep []string
	for _, seg := range strings.Split(p, ".") {
		if seg != "" && seg[0] >= 'A' && seg[0] <= 'Z' {
			continue
		}
		if _, err := strconv.Atoi(seg); err == nil && len(keep) > 0 {
			keep[len(keep)-1] += "[" + seg + "]" // an index an UnmarshalJSON gave: adapters[0]
			continue
		}
		keep = append(keep, seg)
	}
	return strings.Join(keep, ".")
}

// jsonKind names the JSON a Go type takes; for an integer sent a number
// it cannot hold (a fraction, or out of range), the range too.
func jsonKind(t reflect.Type, value string) string {
	if kind := ipc.JSONKind(t); kind != "" {
		return kind
	}
	number := strings.HasPrefix(value, "number")
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if number {
			bits := t.Bits()
			return fmt.Sprintf("an integer from %d to %d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
		}
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if number {
			return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<(t.Bits()-1)*2-1)
		}
		return "a non-negative integer"
	case reflect.Float32:
		if number { // a number past float32's range (1e39)
			return fmt.Sprintf("a number from %.2g to %.2g", -math.MaxFloat32, math.MaxFloat32)
		}
	}
	return "a number"
}

package gguf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ValueType is the type tag GGUF stores before every metadata value. The
// numeric values are part of the file format.
type ValueType uint32

// The GGUF metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64",
}

// String returns the GGUF spec name of the type, e.g. "uint32".
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(t))
}

// Valid reports whether t is one of the thirteen GGUF value types.
func (t ValueType) Valid() bool { return t <= TypeFloat64 }

// size is the encoded size of a fixed-size scalar, or 0 for strings and arrays.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

func (t ValueType) signed() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

func (t ValueType) unsigned() bool {
	return t == TypeUint8 || t == TypeUint16 || t == TypeUint32 || t == TypeUint64
}

// Value is one typed GGUF metadata value. Scalars keep their exact GGUF
// type; arrays keep their element type and hold their elements as a typed Go
// slice ([]uint8 ... []float64, []bool, []string, or []Value for arrays of
// arrays). The zero Value is an invalid value of no type.
type Value struct {
	typ  ValueType
	elem ValueType // element type, for arrays
	bits uint64    // scalar payload: integers as (u)int64 bits, floats as float64 bits, bool as 0/1
	str  string
	arr  any
	ok   bool
}

// Type returns the GGUF type of the value.
func (v Value) Type() ValueType { return v.typ }

// ElemType returns the element type of an array value (meaningless otherwise).
func (v Value) ElemType() ValueType { return v.elem }

// IsArray reports whether v is an array.
func (v Value) IsArray() bool { return v.ok && v.typ == TypeArray }

// Uint returns v as an unsigned integer: any unsigned type, or a signed type
// holding a non-negative value.
func (v Value) Uint() (uint64, bool) {
	switch {
	case !v.ok:
		return 0, false
	case v.typ.unsigned():
		return v.bits, true
	case v.typ.signed() && int64(v.bits) >= 0:
		return v.bits, true
	}
	return 0, false
}

// Int returns v as a signed integer: any signed type, or an unsigned type
// whose value fits in an int64.
func (v Value) Int() (int64, bool) {
	switch {
	case !v.ok:
		return 0, false
	case v.typ.signed():
		return int64(v.bits), true
	case v.typ.unsigned() && v.bits <= math.MaxInt64:
		return int64(v.bits), true
	}
	return 0, false
}

// Float returns v as a float64: float32 and float64 values, and integers
// converted (writers disagree on whether e.g. a rope base is stored as a
// float or an integer).
func (v Value) Float() (float64, bool) {
	switch {
	case !v.ok:
		return 0, false
	case v.typ == TypeFloat32 || v.typ == TypeFloat64:
		return math.Float64frombits(v.bits), true
	case v.typ.signed():
		return float64(int64(v.bits)), true
	case v.typ.unsigned():
		return float64(v.bits), true
	}
	return 0, false
}

// Bool returns a bool value.
func (v Value) Bool() (bool, bool) {
	if !v.ok || v.typ != TypeBool {
		return false, false
	}
	return v.bits != 0, true
}

// Str returns a string value. (String is the fmt.Stringer rendering.)
func (v Value) Str() (string, bool) {
	if !v.ok || v.typ != TypeString {
		return "", false
	}
	return v.str, true
}

// Len returns the number of elements of an array value, 0 otherwise.
func (v Value) Len() int {
	if !v.IsArray() {
		return 0
	}
	switch a := v.arr.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// Index returns element i of an array value as a scalar (or nested array)
// Value; it reports false when v is not an array or i is out of range.
func (v Value) Index(i int) (Value, bool) {
	if !v.IsArray() || i < 0 || i >= v.Len() {
		return Value{}, false
	}
	switch a := v.arr.(type) {
	case []uint8:
		return scalar(TypeUint8, uint64(a[i])), true
	case []int8:
		return scalar(TypeInt8, uint64(int64(a[i]))), true
	case []uint16:
		return scalar(TypeUint16, uint64(a[i])), true
	case []int16:
		return scalar(TypeInt16, uint64(int64(a[i]))), true
	case []uint32:
		return scalar(TypeUint32, uint64(a[i])), true
	case []int32:
		return scalar(TypeInt32, uint64(int64(a[i]))), true
	case []float32:
		return scalar(TypeFloat32, math.Float64bits(float64(a[i]))), true
	case []bool:
		return boolValue(a[i]), true
	case []string:
		return stringValue(a[i]), true
	case []uint64:
		return scalar(TypeUint64, a[i]), true
	case []int64:
		return scalar(TypeInt64, uint64(a[i])), true
	case []float64:
		return scalar(TypeFloat64, math.Float64bits(a[i])), true
	case []Value:
		return a[i], true
	}
	return Value{}, false
}

// Array returns the typed slice backing an array value ([]uint8 ... []Value).
// The slice is shared with the File: do not modify it.
func (v Value) Array() (any, bool) {
	if !v.IsArray() {
		return nil, false
	}
	return v.arr, true
}

// Strings returns a string array without copying. Do not modify it.
func (v Value) Strings() ([]string, bool) {
	if !v.IsArray() {
		return nil, false
	}
	s, ok := v.arr.([]string)
	return s, ok
}

// Float32s returns a float32 array without copying (do not modify it), or a
// float64 array converted to float32.
func (v Value) Float32s() ([]float32, bool) {
	if !v.IsArray() {
		return nil, false
	}
	switch a := v.arr.(type) {
	case []float32:
		return a, true
	case []float64:
		out := make([]float32, len(a))
		for i, x := range a {
			out[i] = float32(x)
		}
		return out, true
	}
	return nil, false
}

// Int32s returns an integer array as []int32: an int32 array without
// copying (do not modify it), any other integer element type converted when
// every element fits in an int32.
func (v Value) Int32s() ([]int32, bool) {
	if !v.IsArray() {
		return nil, false
	}
	if a, ok := v.arr.([]int32); ok {
		return a, true
	}
	if !v.elem.signed() && !v.elem.unsigned() {
		return nil, false
	}
	n := v.Len()
	out := make([]int32, n)
	for i := 0; i < n; i++ {
		e, _ := v.Index(i)
		x, ok := e.Int()
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(x)
	}
	return out, true
}

// Interface returns the value as a plain Go value: uint8 ... float64, bool,
// string, a typed slice for arrays of scalars, []any for arrays of arrays.
func (v Value) Interface() any {
	if !v.ok {
		return nil
	}
	switch v.typ {
	case TypeUint8:
		return uint8(v.bits)
	case TypeInt8:
		return int8(int64(v.bits))
	case TypeUint16:
		return uint16(v.bits)
	case TypeInt16:
		return int16(int64(v.bits))
	case TypeUint32:
		return uint32(v.bits)
	case TypeInt32:
		return int32(int64(v.bits))
	case TypeFloat32:
		return float32(math.Float64frombits(v.bits))
	case TypeBool:
		return v.bits != 0
	case TypeString:
		return v.str
	case TypeUint64:
		return v.bits
	case TypeInt64:
		return int64(v.bits)
	case TypeFloat64:
		return math.Float64frombits(v.bits)
	case TypeArray:
		if a, ok := v.arr.([]Value); ok {
			out := make([]any, len(a))
			for i, e := range a {
				out[i] = e.Interface()
			}
			return out
		}
		return v.arr
	}
	return nil
}

// String renders the value for people: scalars as Go would print them,
// strings quoted, arrays as "[type × n] [first elements ...]".
func (v Value) String() string { return v.Format(8) }

// Format renders the value like String, showing at most maxElems array
// elements (all of them if maxElems < 0).
func (v Value) Format(maxElems int) string {
	if !v.ok {
		return "<invalid>"
	}
	switch v.typ {
	case TypeString:
		return strconv.Quote(v.str)
	case TypeArray:
		n := v.Len()
		var b strings.Builder
		fmt.Fprintf(&b, "[%s × %d] [", v.elem, n)
		shown := n
		if maxElems >= 0 && shown > maxElems {
			shown = maxElems
		}
		for i := 0; i < shown; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			e, _ := v.Index(i)
			b.WriteString(e.Format(maxElems))
		}
		if shown < n {
			fmt.Fprintf(&b, ", … (%d more)", n-shown)
		}
		b.WriteString("]")
		return b.String()
	}
	return fmt.Sprint(v.Interface())
}

func scalar(t ValueType, bits uint64) Value { return Value{typ: t, bits: bits, ok: true} }

func boolValue(b bool) Value {
	if b {
		return scalar(TypeBool, 1)
	}
	return scalar(TypeBool, 0)
}

func stringValue(s string) Value { return Value{typ: TypeString, str: s, ok: true} }

func arrayValue(elem ValueType, arr any) Value {
	return Value{typ: TypeArray, elem: elem, arr: arr, ok: true}
}

// NewValue converts a Go value to a Value: uint8 ... uint64, int8 ... int64,
// float32, float64, bool, string, slices of those ([]uint8 ... []float64,
// []bool, []string), []Value (an array of arrays; every element must be an
// array) and Value itself. int and uint are stored as int64/uint64.
func NewValue(x any) (Value, error) {
	switch x := x.(type) {
	case Value:
		if !x.ok {
			return Value{}, fmt.Errorf("gguf: invalid (zero) Value")
		}
		return x, nil
	case uint8:
		return scalar(TypeUint8, uint64(x)), nil
	case int8:
		return scalar(TypeInt8, uint64(int64(x))), nil
	case uint16:
		return scalar(TypeUint16, uint64(x)), nil
	case int16:
		return scalar(TypeInt16, uint64(int64(x))), nil
	case uint32:
		return scalar(TypeUint32, uint64(x)), nil
	case int32:
		return scalar(TypeInt32, uint64(int64(x))), nil
	case uint64:
		return scalar(TypeUint64, x), nil
	case int64:
		return scalar(TypeInt64, uint64(x)), nil
	case int:
		return scalar(TypeInt64, uint64(int64(x))), nil
	case uint:
		return scalar(TypeUint64, uint64(x)), nil
	case float32:
		return scalar(TypeFloat32, math.Float64bits(float64(x))), nil
	case float64:
		return scalar(TypeFloat64, math.Float64bits(x)), nil
	case bool:
		return boolValue(x), nil
	case string:
		return stringValue(x), nil
	case []uint8:
		return arrayValue(TypeUint8, x), nil
	case []int8:
		return arrayValue(TypeInt8, x), nil
	case []uint16:
		return arrayValue(TypeUint16, x), nil
	case []int16:
		return arrayValue(TypeInt16, x), nil
	case []uint32:
		return arrayValue(TypeUint32, x), nil
	case []int32:
		return arrayValue(TypeInt32, x), nil
	case []float32:
		return arrayValue(TypeFloat32, x), nil
	case []bool:
		return arrayValue(TypeBool, x), nil
	case []string:
		return arrayValue(TypeString, x), nil
	case []uint64:
		return arrayValue(TypeUint64, x), nil
	case []int64:
		return arrayValue(TypeInt64, x), nil
	case []float64:
		return arrayValue(TypeFloat64, x), nil
	case []Value:
		return ArrayOf(x...)
	}
	return Value{}, fmt.Errorf("gguf: unsupported metadata value type %T", x)
}

// ArrayOf builds an array of arrays (GGUF element type array) from array
// Values; the inner arrays may have different element types, as in GGUF.
func ArrayOf(elems ...Value) (Value, error) {
	for i, e := range elems {
		if !e.IsArray() {
			return Value{}, fmt.Errorf("gguf: ArrayOf element %d is %s, not an array", i, e.typ)
		}
	}
	cp := append([]Value(nil), elems...)
	return arrayValue(TypeArray, cp), nil
}

package data

import (
	"encoding/json"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// textAt returns the value of arr at row i as text: strings as they are, numbers and booleans in
// their usual notation, nested values as compact JSON. ok is false for a null.
func textAt(arr arrow.Array, i int) (text string, ok bool) {
	if arr == nil || arr.IsNull(i) {
		return "", false
	}
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i), true
	case *array.LargeString:
		return a.Value(i), true
	case *array.Binary:
		return string(a.Value(i)), true
	case *array.LargeBinary:
		return string(a.Value(i)), true
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10), true
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10), true
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10), true
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10), true
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10), true
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10), true
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64), true
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32), true
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i)), true
	case *array.Dictionary:
		return textAt(a.Dictionary(), a.GetValueIndex(i))
	}
	raw, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return "", false
	}
	return string(raw), true
}

// jsonAt returns the value of arr at row i as a JSON value (nil for null).
func jsonAt(arr arrow.Array, i int) json.RawMessage {
	if arr == nil || arr.IsNull(i) {
		return json.RawMessage("null")
	}
	if d, ok := arr.(*array.Dictionary); ok {
		return jsonAt(d.Dictionary(), d.GetValueIndex(i))
	}
	raw, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return json.RawMessage("null")
	}
	return raw
}

// stringValues is what string-like Arrow arrays have in common.
type stringValues interface {
	arrow.Array
	Value(i int) string
}

// stringColumn returns arr as a string array, or nil if it holds something else.
func stringColumn(arr arrow.Array) stringValues {
	switch a := arr.(type) {
	case *array.String:
		return a
	case *array.LargeString:
		return a
	}
	return nil
}

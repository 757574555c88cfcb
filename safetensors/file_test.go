package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

func TestWriteReadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	vals := []float32{0, -0.5, 1, 3.14159, 1e-8, float32(math.Ldexp(1, -24)), 65504, float32(math.Inf(1)), float32(math.Inf(-1))}
	ids := []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	ids64 := binary.LittleEndian.AppendUint64(nil, uint64(1<<40))
	tensors := []Tensor{
		{Name: "half", DType: F16, Shape: []int{3, 3}, Data: vals},
		{Name: "brain", DType: BF16, Shape: []int{9}, Data: vals},
		{Name: "full", DType: F32, Shape: []int{1, 9}, Data: vals},
		{Name: "ids", DType: I32, Shape: []int{2}, Raw: ids},
		{Name: "big", DType: I64, Shape: []int{}, Raw: ids64},
		{Name: "empty", DType: F32, Shape: []int{0, 4}},
	}
	meta := map[string]string{"format": "pt"}
	if err := Write(path, tensors, meta); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, want := f.Names(), []string{"big", "brain", "empty", "full", "half", "ids"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(f.Metadata(), meta) {
		t.Errorf("Metadata = %v", f.Metadata())
	}
	for _, tc := range tensors[:3] {
		got, shape, err := f.Float32(tc.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(shape, tc.Shape) {
			t.Errorf("%s shape %v, want %v", tc.Name, shape, tc.Shape)
		}
		for i, v := range vals {
			want := v
			switch tc.DType {
			case BF16:
				want = BF16ToFloat32(Float32ToBF16(v))
			case F16:
				want = F16ToFloat32(Float32ToF16(v))
			}
			if got[i] != want {
				t.Errorf("%s[%d] = %g, want %g", tc.Name, i, got[i], want)
			}
		}
	}
	if got, _, _ := f.Float32("half"); got[5] != float32(math.Ldexp(1, -24)) || got[6] != 65504 {
		t.Errorf("F16 subnormal/max did not survive: %v", got)
	}
	if got, shape, err := f.Int64("ids"); err != nil || !reflect.DeepEqual(got, []int64{1, -1}) || !reflect.DeepEqual(shape, []int{2}) {
		t.Errorf("Int64(ids) = %v %v %v", got, shape, err)
	}
	if got, shape, err := f.Int64("big"); err != nil || got[0] != 1<<40 || len(shape) != 0 {
		t.Errorf("Int64(big) = %v %v %v", got, shape, err)
	}
	if got, shape, err := f.Float32("empty"); err != nil || len(got) != 0 || !reflect.DeepEqual(shape, []int{0, 4}) {
		t.Errorf("Float32(empty) = %v %v %v", got, shape, err)
	}
	info, err := f.Info("full")
	if err != nil || info.DType != F32 || info.Elements() != 9 || info.End-info.Begin != 36 {
		t.Errorf("Info(full) = %+v, %v", info, err)
	}
	// Layout: header padded to 8, data starts aligned, every tensor aligned to its element size.
	if f.dataAt%8 != 0 {
		t.Errorf("data section starts at %d, not 8-aligned", f.dataAt)
	}
	for _, n := range f.Names() {
		if in, _ := f.Info(n); in.Begin%int64(in.DType.Size()) != 0 {
			t.Errorf("%s begins at %d, not aligned to %d", n, in.Begin, in.DType.Size())
		}
	}
	if _, _, err := f.Float32("ids"); err == nil || !usererr.Is(err) {
		t.Errorf("Float32 of an I32 tensor: %v", err)
	}
	if err := f.ReadFloat32("full", make([]float32, 8)); err == nil || !strings.Contains(err.Error(), `"full" has shape [1 9]`) {
		t.Errorf("ReadFloat32 with a wrong length: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := f.Raw("full"); err == nil {
		t.Error("Raw after Close succeeded")
	}
}

// The exact bytes of a small file, as the reference implementation lays it out.
func TestWriteExactBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.safetensors")
	if err := Write(path, []Tensor{{Name: "a", DType: F32, Shape: []int{2}, Data: []float32{1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	js := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	js += strings.Repeat(" ", (8-len(js)%8)%8)
	want := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	want = append(want, js...)
	want = append(want, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40)
	if !bytes.Equal(got, want) {
		t.Errorf("file bytes\n got %q\nwant %q", got, want)
	}
}

func TestWriteRejectsBadTensors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"duplicate", []Tensor{{Name: "a", DType: F32, Shape: []int{1}, Data: []float32{1}}, {Name: "a", DType: F32, Shape: []int{1}, Data: []float32{1}}}, `duplicate tensor "a"`},
		{"length", []Tensor{{Name: "a", DType: BF16, Shape: []int{2, 2}, Data: []float32{1}}}, `shape [2 2] has 4 elements, Data has 1`},
		{"dtype", []Tensor{{Name: "a", DType: "Q4", Shape: []int{1}, Data: []float32{1}}}, `unknown dtype "Q4"`},
		{"int data", []Tensor{{Name: "a", DType: I32, Shape: []int{1}, Data: []float32{1}}}, `cannot be stored as I32`},
		{"raw length", []Tensor{{Name: "a", DType: I64, Shape: []int{2}, Raw: make([]byte, 8)}}, `is 16 bytes, Raw has 8`},
		{"reserved", []Tensor{{Name: "__metadata__", DType: F32, Shape: []int{}, Data: []float32{1}}}, `invalid tensor name`},
	} {
		path := filepath.Join(dir, c.name+".safetensors")
		err := Write(path, c.tensors, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		if _, serr := os.Stat(path); serr == nil {
			t.Errorf("%s: a file was left behind", c.name)
		}
	}
}

// file builds safetensors bytes from a header string and a data section.
func file(header string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, data)...)
}

func TestOpenBadFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "model.safetensors: truncated: 0 bytes, need at least 8 for the header length"},
		{"short", []byte{1, 2, 3}, "model.safetensors: truncated: 3 bytes"},
		{"header beyond file", file(ok, 8)[:30], "model.safetensors: header length 54 exceeds the 22 bytes after it"},
		{"huge header length", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), "model.safetensors: header length 18446744073709551615 exceeds"},
		{"bad json", file(`{"a":{"dtype":"F32",`, 8), `model.safetensors: header: invalid JSON in tensor "a": unexpected EOF`},
		{"not an object", file(`[1,2]`, 0), "model.safetensors: header: invalid JSON: want an object"},
		{"trailing garbage", file(ok+`}x`, 8), "model.safetensors: header: invalid JSON: unexpected data after the header object"},
		{"truncated data", file(ok, 5), `model.safetensors: tensor "a": data_offsets [0, 8] out of range: the data section has 5 bytes (file truncated?)`},
		{"size mismatch", file(`{"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}}`, 8), `model.safetensors: header: tensor "a": shape [3] × BF16 is 6 bytes but data_offsets [0, 8] span 8`},
		{"unknown dtype", file(`{"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}}`, 8), `model.safetensors: header: tensor "a": unknown dtype "F8_E4M3"`},
		{"missing dtype", file(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, 8), `tensor "a": missing field "dtype"`},
		{"missing shape", file(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, 8), `tensor "a": missing field "shape"`},
		{"missing offsets", file(`{"a":{"dtype":"F32","shape":[2]}}`, 8), `tensor "a": missing field "data_offsets"`},
		{"three offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}}`, 8), `tensor "a": data_offsets: want [begin, end], got 3 numbers`},
		{"begin after end", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, 8), `tensor "a": data_offsets [8, 0]: begin after end`},
		{"negative offset", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, 8), `tensor "a": field "data_offsets": want uint64, got JSON number -8`},
		{"negative dim", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, 8), `tensor "a": shape [-2]: dimension 0 is -2`},
		{"wrong field type", file(`{"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}`, 8), `tensor "a": field "dtype": want string, got JSON number`},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12), `model.safetensors: tensor "b": data_offsets [4, 12] overlap tensor "a" [0, 8]`},
		{"duplicate", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8), `header: duplicate tensor "a"`},
		{"bad metadata", file(`{"__metadata__":{"n":1}}`, 0), `header: __metadata__: want an object of strings`},
		{"overflowing shape", file(`{"a":{"dtype":"I64","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,8]}}`, 8), `too many elements`},
	} {
		if err := os.WriteFile("model.safetensors", c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open("model.safetensors")
		if err == nil {
			f.Close()
			t.Errorf("%s: opened without error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !usererr.Is(err) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q (user error %v), want one line containing %q", c.name, err, usererr.Is(err), c.want)
		}
	}
}

func TestOpenAcceptsUnpaddedAndGaps(t *testing.T) {
	// Old writers did not pad the header; gaps between tensors and zero-sized tensors are legal.
	path := filepath.Join(t.TempDir(), "x.safetensors")
	data := file(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"z":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},"b":{"dtype":"F16","shape":[1],"data_offsets":[4,6]}}`, 6)
	binary.LittleEndian.PutUint16(data[len(data)-2:], 0x3c00) // b = 1.0
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if v, _, err := f.Float32("b"); err != nil || v[0] != 1 {
		t.Errorf("b = %v, %v", v, err)
	}
}

func TestMissingTensorAndFile(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := Write("model.safetensors", []Tensor{{Name: "a", DType: F32, Shape: []int{1}, Data: []float32{1}}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open("model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, err = f.Float32("model.layers.3.mlp.up_proj.weight")
	if want := `model.safetensors: tensor "model.layers.3.mlp.up_proj.weight" not found`; err == nil || err.Error() != want || !usererr.Is(err) {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, err := Open("nope.safetensors"); err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), "nope.safetensors") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Open("."); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(file(`{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,1],"data_offsets":[0,4]},"b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}}`, 16))
	f.Add(file(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"F16","shape":[1],"data_offsets":[1,3]}}   `, 3))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := parseHeader("fuzz.safetensors", data)
		if err != nil {
			if !usererr.Is(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not a one-line user error: %q", err)
			}
			return
		}
		size := int64(len(data)) - h.dataAt
		for i, n := range h.names {
			in := h.tensors[n]
			if in.Begin < 0 || in.End > size || in.Begin > in.End {
				t.Fatalf("tensor %q range [%d, %d] outside data of %d", n, in.Begin, in.End, size)
			}
			if in.End-in.Begin != in.Elements()*int64(in.DType.Size()) {
				t.Fatalf("tensor %q size mismatch accepted", n)
			}
			for _, m := range h.names[:i] {
				o := h.tensors[m]
				if in.Begin < in.End && o.Begin < o.End && in.Begin < o.End && o.Begin < in.End {
					t.Fatalf("overlapping tensors %q and %q accepted", n, m)
				}
			}
		}
		// Reading every float tensor through a File over the same bytes must not fail or panic.
		fl := &File{path: "fuzz.safetensors", data: data, header: h}
		for _, n := range h.names {
			if h.tensors[n].DType.IsFloat() {
				if _, _, err := fl.Float32(n); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

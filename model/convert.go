package model

import (
	"fmt"

	"gorstar/internal/usererr"
	"gorstar/safetensors"
)

// ConvertDType names the safetensors dtype of a precision name: "fp32" F32, "bf16" BF16.
func ConvertDType(name string) (safetensors.DType, error) {
	switch name {
	case "fp32":
		return safetensors.F32, nil
	case "bf16":
		return safetensors.BF16, nil
	}
	return "", usererr.New("--dtype %q: want fp32 or bf16", name)
}

// Convert writes the Hugging Face model in dir in to out with its weights stored as dtype (BF16
// rounded to nearest even from the loaded values; from a bf16 checkpoint to F32 and back, the same
// bits), the other files as they were; out is replaced atomically.
func Convert(in, out string, dtype safetensors.DType) error {
	o := LoadOptions{}
	if dtype == safetensors.BF16 { // straight into bf16: no float32 copy, the same bits
		o = LoadOptions{Precision: BF16, Inference: true}
	}
	m, err := LoadWith(in, o)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.SaveAs(out, dtype); err != nil {
		return fmt.Errorf("convert %s: %w", in, err)
	}
	return nil
}

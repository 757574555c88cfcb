package model

import (
	"slices"
	"sort"

	"gorstar/internal/usererr"
	"gorstar/safetensors"
)

// Info describes a model directory without loading its weights.
type Info struct {
	Config    Config
	NumParams int64
	DTypes    []string // the weight dtypes found, sorted
	FileBytes int64    // bytes of the architecture's tensors in the files
	Unused    int      // tensors in the files the architecture does not use
}

// Inspect reads dir's config.json and checks that its safetensors hold every tensor the
// architecture needs with the right shape, reading only the headers.
func Inspect(dir string) (Info, error) {
	c, err := LoadConfig(dir)
	if err != nil {
		return Info{}, err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return Info{}, err
	}
	defer set.Close()
	info := Info{Config: c, NumParams: c.NumParams()}
	dtypes := map[string]bool{}
	used := map[string]bool{}
	for _, t := range c.tensorSpecs() {
		if !set.Has(t.name) {
			return Info{}, usererr.New("%s: tensor %s is missing (want shape %v)", dir, t.name, t.shape)
		}
		ti, err := set.Info(t.name)
		if err != nil {
			return Info{}, err
		}
		if !slices.Equal(ti.Shape, t.shape) {
			return Info{}, usererr.New("%s: tensor %s has shape %v, want %v", dir, t.name, ti.Shape, t.shape)
		}
		dtypes[string(ti.DType)] = true
		info.FileBytes += ti.End - ti.Begin
		used[t.name] = true
	}
	for _, n := range set.Names() {
		if !used[n] {
			info.Unused++
		}
	}
	for d := range dtypes {
		info.DTypes = append(info.DTypes, d)
	}
	sort.Strings(info.DTypes)
	return info, nil
}
